"""Agents scripted over the wire: the fake OpenAI server answers chat requests the way a model acting in one
of CRMArena's frameworks would (tool calls, or tagged text), so `orgseed eval` is driven end to end by the
real `openai` client.

`ScriptedAgent(tasks_json, mode)` is the server's `agent` knob. It finds the instance by its query (the user
message), reads the right answer from the bundle's `tasks/tasks.json` (the build's ground truth, not the
harness's), tells the framework from the request (tools given: function calling; `<thought>` in the system
prompt: ReAct; else Act), and counts its own turn from the assistant messages so far. Modes:

- `oracle`: one real action (a tool call or a query), then the right answer;
- `none`: answers None at once;
- `malformed`: the ways models break the format first (function calling: arguments that are not JSON, a reply
  without a tool call, an unknown tool, `respond` without `content`; ReAct/Act: a reply without tags, an empty
  `<respond>`, a query the org refuses), then the right answer;
- `silent`: never writes an action.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# What each mode does before answering, per framework (consumed one per turn).
FC_STEPS = {
    "oracle": ["get_issues"],
    "none": [],
    "malformed": ["bad_json", "no_call", "unknown_tool", "respond_without_content"],
}
CHAT_STEPS = {
    "oracle": ["query"],
    "none": [],
    "malformed": ["no_tags", "empty_respond", "bad_query"],
}
# What the malformed script must cost, counted by hand from the steps above.
MALFORMED_COUNTS = {
    "function-calling": {"invalid_actions": 2, "tool_errors": 2, "turns": 5},
    "react": {"invalid_actions": 2, "tool_errors": 1, "turns": 4},
    "act": {"invalid_actions": 2, "tool_errors": 1, "turns": 4},
}


def answers_of(tasks_json: Path) -> dict[str, list[tuple[str, str]]]:
    """query → [(metadata.required, the answer an agent should give)], from the task file as built (null →
    'None'). Several instances can share a query (policy violation names its case only in `required`)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for t in json.loads(tasks_json.read_text(encoding="utf-8")):
        a = t["answer"]
        if isinstance(a, list):
            a = ", ".join("None" if x is None else str(x) for x in a) if a else None
        required = str((t.get("metadata") or {}).get("required") or "")
        out.setdefault(str(t["query"]).strip(), []).append((required, "None" if a is None else str(a)))
    return out


def answer_for(answers: dict[str, list[tuple[str, str]]], query: str, system: str) -> str:
    """The answer of the instance whose query and task context the request carries."""
    found = [a for required, a in answers[query] if required in system]
    assert len(set(found)) == 1, f"the request does not identify one instance ({query[:60]}...)"
    return found[0]


class ScriptedAgent:
    def __init__(self, tasks_json: Path, mode: str = "oracle") -> None:
        self.answers = answers_of(tasks_json)
        self.mode = mode
        self.requests = 0

    def __call__(self, req: dict[str, Any]) -> dict[str, Any]:
        self.requests += 1
        messages = req["messages"]
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        query = next(m["content"] for m in messages if m["role"] == "user").strip()
        answer = "None" if self.mode == "none" else answer_for(self.answers, query, system)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        if req.get("tools"):
            message = self._function_calling(turn, answer)
        else:
            message = {"role": "assistant", "content": self._chat(turn, answer, "<thought>" in system)}
        return completion(req, message)

    def _function_calling(self, turn: int, answer: str) -> dict[str, Any]:
        if self.mode == "silent":
            return {"role": "assistant", "content": "I am thinking about it."}
        steps = FC_STEPS[self.mode]
        step = steps[turn] if turn < len(steps) else "respond"
        name, args = {
            "get_issues": ("get_issues", "{}"),
            "bad_json": ("get_cases", "{'statuses': ['Closed'"),
            "unknown_tool": ("get_everything", "{}"),
            "respond_without_content": ("respond", '{"answer": "x"}'),
            "respond": ("respond", json.dumps({"content": answer})),
        }.get(step, ("", ""))
        if step == "no_call":
            return {"role": "assistant", "content": f"The answer is {answer}."}
        call = {"id": f"call_{turn}", "type": "function", "function": {"name": name, "arguments": args}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    def _chat(self, turn: int, answer: str, react: bool) -> str:
        thought = "<thought> Let me look. </thought>\n" if react else ""
        if self.mode == "silent":
            return "Let me think about this."
        steps = CHAT_STEPS[self.mode]
        step = steps[turn] if turn < len(steps) else "respond"
        if step == "query":
            return f"{thought}<execute> SELECT Id, Name FROM Issue__c </execute>"
        if step == "no_tags":
            return f"I believe the answer is {answer}."
        if step == "empty_respond":
            return f"{thought}<respond>   </respond>"
        if step == "bad_query":
            return f"{thought}<execute> SELEC Id FROM Case </execute>"
        return f"{thought}<respond> {answer} </respond>"


def completion(req: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    """A chat.completion body with usage counted like the fake server's (characters / 4)."""
    prompt = sum(len(json.dumps(m.get("content") or "")) for m in req["messages"]) // 4 + 1
    out = len(json.dumps(message)) // 4 + 1
    return {
        "id": "chatcmpl-agent",
        "object": "chat.completion",
        "created": 0,
        "model": req.get("model", "fake-model"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
    }
