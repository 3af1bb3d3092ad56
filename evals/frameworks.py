"""One episode under one of CRMArena's three agentic frameworks (reference §8.2), with its action parsing
and failure handling:

- **function-calling** (CRMArena's ToolCallAgent + ToolEnv): the tools as OpenAI tools, `respond` to answer.
  Only the first tool call of a reply counts. Arguments that are not JSON get a tool message saying so; a
  reply with no tool call gets a rule reminder; an unknown tool or wrong arguments give an `Error`/`Unknown
  action` observation; `respond` without `content` is an error observation and the episode goes on.
- **react** (CRMArena's ChatAgent, react): `<thought>` + one `<execute>SOQL/SOSL</execute>` or
  `<respond>answer</respond>`; **act**: the same without thoughts. A reply with neither tag, or with an empty
  one, is an invalid action answered by the rule reminder. Query results come back as
  `Salesforce instance output: ...`.

Every model call is a turn; an episode ends at `respond` or after `max_turns` turns (reward 0).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from evals import prompts
from evals.agents import Episode, ModelRejected
from orgs import crmarena_tools as ct

FRAMEWORKS = ("function-calling", "react", "act")
_EXECUTE = re.compile(r"<execute>(.*?)</execute>", re.DOTALL)
_RESPOND = re.compile(r"<respond>(.*?)</respond>", re.DOTALL)


@dataclass
class Outcome:
    answer: Any = None  # what the agent submitted (None: it never did)
    responded: bool = False
    end_reason: str = "max_turns"
    turns: int = 0
    actions: int = 0  # tool calls / queries executed
    invalid_actions: int = 0  # replies the framework could not read as an action
    tool_errors: int = 0  # observations that are errors (refused queries, bad arguments, unknown tools)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0  # answered by the endpoint (billed)
    cache_hits: int = 0
    cost: float | None = 0.0
    model_seconds: float = 0.0
    seconds: float = 0.0
    messages: list[dict[str, Any]] = field(default_factory=list)


def _is_error(observation: Any) -> bool:
    return isinstance(observation, str) and bool(re.match(r"^(Error|Unknown action|[A-Z_]+: )", observation))


def _account(out: Outcome, reply: Any) -> None:
    out.turns += 1
    out.prompt_tokens += reply.prompt_tokens
    out.completion_tokens += reply.completion_tokens
    out.requests += 1 if reply.sent else 0
    out.cache_hits += 1 if reply.cached else 0
    out.model_seconds += reply.seconds
    if reply.cost is None or out.cost is None:
        out.cost = None if reply.sent else out.cost
    else:
        out.cost += reply.cost


def run_episode(
    framework: str,
    episode: Episode,
    system: str,
    query: str,
    conn: ct.Connector,
    *,
    max_turns: int = 20,
    raw_queries: bool = True,
) -> Outcome:
    started = time.perf_counter()
    out = Outcome(
        messages=[{"role": "system", "content": system}, {"role": "user", "content": query.strip()}]
    )
    try:
        if framework == "function-calling":
            _function_calling(out, episode, conn, max_turns, raw_queries)
        elif framework in ("react", "act"):
            _chat(out, episode, conn, max_turns, framework)
        else:
            raise ValueError(f"unknown framework {framework!r}; expected one of {', '.join(FRAMEWORKS)}")
    except ModelRejected as exc:
        out.end_reason = f"model_rejected: {exc}"
    out.seconds = time.perf_counter() - started
    return out


def tool_schemas(raw_queries: bool) -> list[dict[str, Any]]:
    tools = [*ct.TOOLS, *(ct.RAW_QUERY_TOOLS if raw_queries else ())]
    return [t.openai() for t in tools]


def _function_calling(
    out: Outcome, episode: Episode, conn: ct.Connector, max_turns: int, raw_queries: bool
) -> None:
    tools = tool_schemas(raw_queries)
    allowed = {t["function"]["name"] for t in tools}
    msgs = out.messages
    for _ in range(max_turns):
        reply = episode.reply(msgs, tools)
        _account(out, reply)
        calls = reply.tool_calls or []
        first = calls[0] if calls else None
        fn = (first or {}).get("function") or {}
        if first is None or not fn.get("name"):  # no tool call: remind the rules
            out.invalid_actions += 1
            msgs.append({"role": "assistant", "content": reply.content or ""})
            msgs.append({"role": "user", "content": prompts.FC_RULE})
            continue
        try:
            arguments: Any = json.loads(fn.get("arguments") or "")
        except (TypeError, ValueError):  # arguments that are not JSON: say so in the tool's answer
            out.invalid_actions += 1
            if first.get("id"):
                msgs.append({"role": "assistant", "content": reply.content, "tool_calls": [first]})
                msgs.append(
                    {"role": "tool", "tool_call_id": first["id"], "content": prompts.FC_BAD_ARGUMENTS}
                )
            else:
                msgs.append({"role": "assistant", "content": reply.content or ""})
                msgs.append({"role": "user", "content": prompts.FC_RULE})
            continue
        name = str(fn["name"]).strip()
        msgs.append({"role": "assistant", "content": reply.content, "tool_calls": [first]})
        if name == "respond" and isinstance(arguments, dict) and "content" in arguments:
            out.answer, out.responded, out.end_reason = arguments["content"], True, "respond"
            return
        out.actions += 1
        if name not in allowed:
            observation: Any = f"Unknown action {name}"
        elif not isinstance(arguments, dict):
            observation = (
                f"Error: {name}() argument after ** must be a mapping, not {type(arguments).__name__}"
            )
        elif name == "respond":
            observation = "Error: 'content'"
        else:
            observation = ct.call(conn, name, arguments)
        if _is_error(observation):
            out.tool_errors += 1
        msgs.append(
            {"role": "tool", "tool_call_id": first.get("id") or "", "name": name, "content": str(observation)}
        )


def _chat(out: Outcome, episode: Episode, conn: ct.Connector, max_turns: int, framework: str) -> None:
    rule = prompts.REACT_RULE if framework == "react" else prompts.ACT_RULE
    msgs = out.messages
    for _ in range(max_turns):
        reply = episode.reply(msgs, None)
        _account(out, reply)
        content = (reply.content or "").strip()
        msgs.append({"role": "assistant", "content": content})
        m = _EXECUTE.search(content)
        query = m.group(1).strip() if m else ""
        if query:
            out.actions += 1
            result, ok = conn.run_query(query)
            if not ok:
                out.tool_errors += 1
            msgs.append({"role": "user", "content": prompts.OBSERVATION.format(observation=result)})
            continue
        m = _RESPOND.search(content)
        answer = m.group(1).strip() if m else ""
        if answer:
            out.answer, out.responded, out.end_reason = answer, True, "respond"
            return
        out.invalid_actions += 1
        msgs.append({"role": "user", "content": rule})
