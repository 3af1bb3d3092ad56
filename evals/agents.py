"""Who answers: a model behind any OpenAI-compatible endpoint, or a built-in baseline with no LLM.

An agent starts one `Episode` per instance; the framework loop asks the episode for a `Reply` to the
conversation so far, exactly as it would ask a model. Baselines therefore run through the same loop,
parsers and rewards as a model does:

- `oracle` replays the reference composition of CRMArena's tools (`evals.oracle`) and answers with its result;
- `none` always answers None;
- `majority` answers the task's most common ground-truth answer in the bundle;
- `random` answers a random valid candidate: one of the task's distinct ground-truth answers in the bundle
  (None included where the task has None answers), seeded per instance.

The model client is the official `openai` one. Every request is cached on disk by content (the writer's
cache, `generator/text/cache.py`): a rerun of the same conversation sends nothing and costs nothing.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from evals.oracle import plan
from evals.tasks import Instance
from generator.text.cache import CachedResponse, ResponseCache, request_key
from generator.text.llm import endpoint_url
from generator.text.usage import cost as price_cost
from orgs.crmarena_tools import Connector
from schemas.errors import Terminal, Transient

CACHE_KIND = "eval"
CACHE_TEMPLATE = "eval-agent-v1"


class ModelUnavailable(Transient):
    """The endpoint did not answer after retries (429s, 5xx, timeouts): rerun to resume."""

    FIELDS: ClassVar[tuple[str, ...]] = ("model",)

    def __init__(self, message: str, *, model: str | None = None) -> None:
        super().__init__(message)
        self.model = model


class ModelRefused(Terminal):
    """The endpoint refuses every request (bad key, unknown model, wrong URL): fix the settings."""

    FIELDS: ClassVar[tuple[str, ...]] = ("model",)

    def __init__(self, message: str, *, model: str | None = None) -> None:
        super().__init__(message)
        self.model = model


class ModelRejected(Exception):
    """The endpoint refused this request (e.g. the conversation outgrew the context): the episode ends."""


@dataclass
class Reply:
    content: str | None
    tool_calls: list[dict[str, Any]] | None = None  # OpenAI shape: {id, type, function: {name, arguments}}
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False  # replayed from the cache (not billed)
    sent: bool = False  # answered by the endpoint (billed)
    cost: float | None = 0.0
    seconds: float = 0.0  # waiting for the model


class Episode(Protocol):
    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Reply: ...


class Agent(Protocol):
    name: str

    def start(self, inst: Instance, framework: str, conn: Connector) -> Episode: ...


# -- answers in each framework's format -------------------------------------------------------------------------


def tool_call(n: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def respond_reply(framework: str, answer: str, n: int = 0) -> Reply:
    if framework == "function-calling":
        return Reply(None, [tool_call(n, "respond", {"content": answer})])
    thought = "<thought> I have the answer. </thought>\n" if framework == "react" else ""
    return Reply(f"{thought}<respond> {answer} </respond>")


# -- baselines -----------------------------------------------------------------------------------------------------


class _Fixed:
    def __init__(self, framework: str, answer: str) -> None:
        self.framework, self.answer = framework, answer

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Reply:
        return respond_reply(self.framework, self.answer)


class NoneAgent:
    name = "none"

    def start(self, inst: Instance, framework: str, conn: Connector) -> Episode:
        return _Fixed(framework, "None")


class MajorityAgent:
    name = "majority"

    def __init__(self, instances: Sequence[Instance]) -> None:
        by_task: dict[str, Counter[str]] = {}
        for i in instances:
            by_task.setdefault(i.task, Counter())[i.scalar_answer] += 1
        # most common; ties broken by the answer text, so the choice does not depend on file order
        self.answers = {t: min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for t, c in by_task.items()}

    def start(self, inst: Instance, framework: str, conn: Connector) -> Episode:
        return _Fixed(framework, self.answers.get(inst.task, "None"))


class RandomAgent:
    name = "random"

    def __init__(self, instances: Sequence[Instance], seed: int = 0) -> None:
        domains: dict[str, set[str]] = {}
        for i in instances:
            domains.setdefault(i.task, set()).add(i.scalar_answer)
        self.domains = {t: sorted(v) for t, v in domains.items()}
        self.seed = seed

    def start(self, inst: Instance, framework: str, conn: Connector) -> Episode:
        rng = random.Random(f"{self.seed}:{inst.idx}")
        return _Fixed(framework, rng.choice(self.domains.get(inst.task, ["None"])))


class _Replay:
    def __init__(self, framework: str, conn: Connector, inst: Instance) -> None:
        self.framework = framework
        p = plan(Connector(conn.sf), inst)
        self.answer = p.answer
        if framework == "function-calling":
            self.steps: list[Reply] = [
                Reply(None, [tool_call(n, c.name, c.arguments)]) for n, c in enumerate(p.calls)
            ]
        else:
            thought = "<thought> Query the org. </thought>\n" if framework == "react" else ""
            queries = [q for c in p.calls for q in c.queries]
            self.steps = [Reply(f"{thought}<execute> {q} </execute>") for q in queries]

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Reply:
        if self.steps:
            return self.steps.pop(0)
        return respond_reply(self.framework, self.answer, 999)


class OracleAgent:
    name = "oracle"

    def start(self, inst: Instance, framework: str, conn: Connector) -> Episode:
        return _Replay(framework, conn, inst)


# -- a model ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSettings:
    model: str
    base_url: str | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 2000
    timeout: float = 120.0
    max_retries: int = 6


def request_body(
    s: ModelSettings, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": s.model,
        "messages": messages,
        "temperature": s.temperature,
        "top_p": s.top_p,
        "max_tokens": s.max_tokens,
    }
    if tools:
        body["tools"] = tools
    return body


def cache_key(s: ModelSettings, body: dict[str, Any]) -> str:
    """The request's content address (never the key): endpoint, model, messages, tools, parameters."""
    return request_key({"kind": CACHE_KIND, "endpoint": endpoint_url(s.base_url), **body})


class OpenAIAgent:
    """A model behind an OpenAI-compatible endpoint, through the `openai` client, cached per request."""

    def __init__(
        self,
        settings: ModelSettings,
        api_key: str | None,
        cache: ResponseCache | None,
        price: dict[str, float] | None,
    ) -> None:
        from openai import OpenAI

        self.settings = settings
        self.name = settings.model
        self.cache = cache
        self.price = price
        self.client = OpenAI(
            base_url=settings.base_url,
            api_key=api_key or "not-needed",
            timeout=settings.timeout,
            max_retries=settings.max_retries,
        )

    def start(self, inst: Instance, framework: str, conn: Connector) -> Episode:
        return self

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Reply:
        body = request_body(self.settings, messages, tools)
        key = cache_key(self.settings, body)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None and hit.content is not None:
                stored = json.loads(hit.content)
                return Reply(
                    stored.get("content"),
                    stored.get("tool_calls"),
                    hit.prompt_tokens,
                    hit.completion_tokens,
                    cached=True,
                )
        import openai

        started = time.perf_counter()
        try:
            # The conversation and the tools go in `extra_body`, which the client sends as they are: its
            # per-call validation of large nested `messages`/`tools` params cost more than the rest of a turn
            # (measured against the fake server, p50 of a function-calling call: 19.6 -> 6.7 ms).
            big = {k: body[k] for k in ("messages", "tools") if k in body}
            rest = {k: v for k, v in body.items() if k not in big}
            resp = self.client.chat.completions.create(**rest, messages=[], extra_body=big)
        except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
            raise ModelRefused(
                f"The endpoint refused the request ({type(exc).__name__}: {exc}). Check --model, --base-url and "
                "OPENAI_API_KEY.",
                model=self.settings.model,
            ) from exc
        except openai.BadRequestError as exc:
            raise ModelRejected(f"{type(exc).__name__}: {exc}") from exc
        except openai.APIError as exc:
            raise ModelUnavailable(
                f"The endpoint did not answer after {self.settings.max_retries} retries ({type(exc).__name__}: "
                f"{exc}). Rerun the same command to resume: finished instances are kept.",
                model=self.settings.model,
            ) from exc
        seconds = time.perf_counter() - started
        if not resp.choices:
            raise ModelRejected("the endpoint answered with no choices")
        msg = resp.choices[0].message
        calls = [tc.model_dump() for tc in msg.tool_calls] if msg.tool_calls else None
        pt = resp.usage.prompt_tokens if resp.usage else 0
        ct_ = resp.usage.completion_tokens if resp.usage else 0
        if self.cache is not None:
            self.cache.put(
                key,
                self.settings.model,
                CACHE_KIND,
                CACHE_TEMPLATE,
                CachedResponse(
                    json.dumps({"content": msg.content, "tool_calls": calls}),
                    getattr(msg, "refusal", None),
                    resp.choices[0].finish_reason,
                    pt,
                    ct_,
                ),
            )
        return Reply(
            msg.content, calls, pt, ct_, sent=True, cost=price_cost(pt, ct_, self.price), seconds=seconds
        )
