"""`orgseed eval` end to end: the real openai client against the fake server scripted as an agent, the real
simple-salesforce client against the served small bundle, under each of the three frameworks.

Expected scores come from the bundle's task file (the build's ground truth) and hand-counted scripts, never
from the harness."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evals.runner import EvalSettings, read_results, run_eval
from evals.tasks import abbreviations
from tests.fakes.agent_script import MALFORMED_COUNTS, ScriptedAgent
from tests.fakes.openai_server import FakeOpenAI

FRAMEWORKS = ["function-calling", "react", "act"]


def _tasks(bundle: Path) -> list[dict[str, Any]]:
    return json.loads((bundle / "tasks" / "tasks.json").read_text())


def _settings(bundle: Path, fake: FakeOpenAI, framework: str, run: str, **kw: Any) -> EvalSettings:
    return EvalSettings(
        bundle=str(bundle), model="fake-agent", base_url=fake.base_url, framework=framework, run=run, **kw
    )


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_oracle_script_scores_100_in_every_framework(
    eval_bundle: Path, fake_llm: FakeOpenAI, framework: str
) -> None:
    agent = ScriptedAgent(eval_bundle / "tasks" / "tasks.json", "oracle")
    fake_llm.reset(agent=agent)
    report = run_eval(_settings(eval_bundle, fake_llm, framework, f"oracle-{framework}", per_task=3))
    assert len(report.rows) == 27 and report.errors == 0
    assert all(r["reward"] == 1.0 for r in report.rows), [r for r in report.rows if r["reward"] != 1.0][:1]
    assert {report.board[a] for a in abbreviations().values()} == {100.0} and report.board["Overall"] == 100.0
    # one action and one answer each, both through the real client and the real org
    assert fake_llm.stats.requests == 54 == report.totals["requests"]
    assert all(r["turns"] == 2 and r["tool_calls"] == 1 and r["tool_errors"] == 0 for r in report.rows)
    first = report.rows[0]["trajectory"]
    observed = first[3]["content"]
    assert "Issue__c" not in observed and "Id" in observed  # the org's rows, attributes stripped
    assert report.totals["prompt_tokens"] > 0 and report.rows[0]["latency_s"] > 0
    saved = (report.run_dir / "leaderboard.md").read_text()
    assert saved.startswith(
        "| Model | Agentic Framework | NCR | HTU | TCU | NED | PVI | KQA | TII | MTA | BRI | Overall |"
    )


@pytest.mark.parametrize("framework", ["function-calling", "react"])
def test_a_constant_none_agent_scores_exactly_the_none_share_of_each_task(
    eval_bundle: Path, fake_llm: FakeOpenAI, framework: str
) -> None:
    fake_llm.reset(agent=ScriptedAgent(eval_bundle / "tasks" / "tasks.json", "none"))
    report = run_eval(_settings(eval_bundle, fake_llm, framework, f"none-{framework}", concurrency=8))
    tasks = _tasks(eval_bundle)
    assert len(report.rows) == len(tasks)
    for task, abbr in abbreviations().items():
        mine = [t for t in tasks if t["task"] == task]
        if task == "knowledge_qa":  # token F1 of "None" against answers that never say "none"
            assert not any("none" in t["answer"].lower().split() for t in mine)
            expected = 0.0
        else:
            expected = round(100 * sum(t["answer"] is None for t in mine) / len(mine), 1)
        assert report.board[abbr] == expected, task
    assert any(report.board[a] > 0 for a in abbreviations().values())  # the small org has None answers


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_malformed_output_is_handled_as_crmarena_does_and_counted(
    eval_bundle: Path, fake_llm: FakeOpenAI, framework: str
) -> None:
    fake_llm.reset(agent=ScriptedAgent(eval_bundle / "tasks" / "tasks.json", "malformed"))
    report = run_eval(_settings(eval_bundle, fake_llm, framework, f"malformed-{framework}", per_task=1))
    want = MALFORMED_COUNTS[framework]
    for r in report.rows:
        assert (r["invalid_actions"], r["tool_errors"], r["turns"]) == (
            want["invalid_actions"],
            want["tool_errors"],
            want["turns"],
        ), r["idx"]
        assert r["reward"] == 1.0  # the agent recovered and answered right
    assert report.totals["invalid_actions"] == 9 * want["invalid_actions"]
    said = [m["content"] for m in report.rows[0]["trajectory"] if m["role"] in ("user", "tool")]
    if framework == "function-calling":
        assert any("Invalid tool call argument" in str(c) for c in said)  # arguments that were not JSON
        assert any("Invalid tool call!" in str(c) for c in said)  # a reply without a tool call
        assert "Unknown action get_everything" in said
        assert "Error: 'content'" in said
    else:
        assert sum("Invalid output format!" in str(c) for c in said) == 2  # no tags, then an empty respond
        assert any(str(c).startswith("Salesforce instance output: MALFORMED_QUERY") for c in said)


def test_an_agent_that_never_acts_stops_at_max_turns_with_nothing(
    eval_bundle: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reset(agent=ScriptedAgent(eval_bundle / "tasks" / "tasks.json", "silent"))
    report = run_eval(_settings(eval_bundle, fake_llm, "react", "silent", per_task=1, max_turns=3))
    assert {(r["end_reason"], r["turns"], r["reward"], r["answer"]) for r in report.rows} == {
        ("max_turns", 3, 0.0, None)
    }
    assert report.totals["no_answer"] == 9 and report.board["Overall"] == 0.0


def test_a_rerun_resumes_and_replays_from_the_cache(
    eval_bundle: Path, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    agent = ScriptedAgent(eval_bundle / "tasks" / "tasks.json", "oracle")
    fake_llm.reset(agent=agent)
    s = _settings(eval_bundle, fake_llm, "act", "resume", per_task=2, cache=str(tmp_path / "c.sqlite"))
    first = run_eval(s)
    sent = fake_llm.stats.requests
    assert sent == 36 and first.ran == 18
    again = run_eval(s)  # everything finished: nothing runs
    assert (again.ran, again.skipped, fake_llm.stats.requests) == (0, 18, sent)
    # a crash that lost half the results: the lost half runs again, its requests come from the cache
    path = first.run_dir / "results.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:9]) + "\n" + lines[9][:20])  # and a torn last line
    third = run_eval(s)
    assert (third.ran, third.skipped, fake_llm.stats.requests) == (9, 9, sent)
    assert third.totals["cache_hits"] == 18 and sorted(read_results(path)) == sorted(
        r["idx"] for r in first.rows
    )
    assert [r["reward"] for r in third.rows] == [1.0] * 18
    # other settings in the same run folder are refused
    from schemas.errors import UsageError

    with pytest.raises(UsageError, match="other settings"):
        run_eval(_settings(eval_bundle, fake_llm, "react", "resume", per_task=2))


def test_an_unreachable_endpoint_fails_the_instances_not_the_run(
    eval_bundle: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reset(agent=ScriptedAgent(eval_bundle / "tasks" / "tasks.json", "oracle"), server_error_rate=1.0)
    s = _settings(eval_bundle, fake_llm, "act", "down", tasks=("NCR",), per_task=2, no_cache=True, retries=0)
    report = run_eval(s)
    assert report.errors == 2 and all("ModelUnavailable" in r["error"] for r in report.rows)
    assert report.board["NCR"] is None  # failed instances are not scored
    fake_llm.reset(agent=ScriptedAgent(eval_bundle / "tasks" / "tasks.json", "oracle"))
    again = run_eval(s)
    assert again.ran == 2 and again.errors == 0 and again.board["NCR"] == 100.0


def test_builtin_baselines_need_no_model(eval_bundle: Path) -> None:
    tasks = _tasks(eval_bundle)
    for framework in FRAMEWORKS:
        oracle = run_eval(
            EvalSettings(
                bundle=str(eval_bundle), agent="oracle", framework=framework, per_task=4, run=f"o-{framework}"
            )
        )
        assert oracle.board["Overall"] == 100.0 and oracle.totals["requests"] == 0
    majority = run_eval(EvalSettings(bundle=str(eval_bundle), agent="majority", framework="react"))
    for task, abbr in abbreviations().items():
        answers = Counter(json.dumps(t["answer"]) for t in tasks if t["task"] == task)
        top = max(answers.values()) / sum(answers.values())
        if task != "knowledge_qa":
            assert majority.board[abbr] == round(100 * top, 1), task
    randoms = [
        run_eval(
            EvalSettings(bundle=str(eval_bundle), agent="random", framework="act", seed=s, run=f"random-{s}")
        )
        for s in (1, 1, 2)
    ]
    assert [r["answer"] for r in randoms[0].rows] == [r["answer"] for r in randoms[1].rows]
    assert [r["answer"] for r in randoms[0].rows] != [r["answer"] for r in randoms[2].rows]
    valid: dict[str, set[str]] = {}
    for t in tasks:
        valid.setdefault(t["task"], set()).add("None" if t["answer"] is None else str(t["answer"]))
    assert all(r["answer"] in valid[r["task"]] for r in randoms[2].rows)
    board = json.loads((eval_bundle / "reports" / "eval" / "leaderboard.json").read_text())
    assert {"oracle (baseline)", "majority (baseline)", "random (baseline)"} <= {r["model"] for r in board}


def test_a_refused_key_stops_the_run_with_what_to_fix(eval_bundle: Path, fake_llm: FakeOpenAI) -> None:
    from evals.agents import ModelRefused

    fake_llm.reset(
        agent=ScriptedAgent(eval_bundle / "tasks" / "tasks.json", "oracle"), require_key="sk-right"
    )
    s = _settings(eval_bundle, fake_llm, "react", "refused", tasks=("KQA",), per_task=2, no_cache=True)
    with pytest.raises(ModelRefused, match="OPENAI_API_KEY"):
        run_eval(s)
    assert fake_llm.stats.status[401] >= 1
    assert read_results(eval_bundle / "reports" / "eval" / "refused" / "results.jsonl") == {}


def test_an_llm_judge_parses_chat_answers_when_asked(eval_bundle: Path, fake_llm: FakeOpenAI) -> None:
    """`--judge`: answers that are not the bare value are read by a model. The rules read these answers right;
    the scripted judge always extracts an agent nobody is, so its word is visibly what counts."""
    from tests.fakes.agent_script import completion

    tasks = [t for t in _tasks(eval_bundle) if t["task"] == "case_routing"][:2]
    answers = {t["query"].strip(): t["answer"] for t in tasks}
    judged: list[str] = []

    def agent(req: dict[str, Any]) -> dict[str, Any]:
        system = req["messages"][0]["content"]
        if "extract" in system:  # the judge
            judged.append(req["messages"][1]["content"])
            return completion(
                req,
                {"role": "assistant", "content": json.dumps({"extracted_answers": ["005Ws0000000000AAA"]})},
            )
        query = req["messages"][1]["content"].strip()
        return completion(
            req,
            {"role": "assistant", "content": f"<respond> The agent to pick: {answers[query]}. </respond>"},
        )

    fake_llm.reset(agent=agent)
    ruled = run_eval(
        _settings(eval_bundle, fake_llm, "act", "ruled", tasks=("NCR",), per_task=2, no_cache=True)
    )
    assert [r["reward"] for r in ruled.rows] == [1.0, 1.0] and judged == []
    s = _settings(
        eval_bundle, fake_llm, "act", "judged", tasks=("NCR",), per_task=2, judge="fake-judge", no_cache=True
    )
    report = run_eval(s)
    assert len(judged) == 2 and all("The agent to pick" in j for j in judged)
    assert [r["reward"] for r in report.rows] == [0.0, 0.0]
    assert {tuple(r["parsed_answer"]) for r in report.rows} == {("005Ws0000000000AAA",)}


def test_an_org_given_by_url_and_session_is_evaluated_through_the_client_and_a_refused_session_stops_the_run(
    eval_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--instance-url/--session-id`: the org served here stands in for a live one, reached like one (the URL,
    the token, the CA bundle from the environment as `orgseed serve` tells a user to set it)."""
    from orgs.local import server_for
    from orgs.salesforce.connect import OrgConnectError

    server = server_for(eval_bundle)
    assert server.cert_path is not None
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(server.cert_path))
    live = EvalSettings(
        bundle=str(eval_bundle), agent="oracle", framework="act", per_task=1, run="by-url",
        instance_url=server.url, session_id=server.token,
    )  # fmt: skip
    report = run_eval(live)
    assert len(report.rows) == 9 and report.errors == 0
    assert all(r["reward"] == 1.0 and r["tool_calls"] >= 1 for r in report.rows)
    wrong = "00Dwrong!" + "x" * 40
    with pytest.raises(OrgConnectError) as refused:
        run_eval(replace(live, session_id=wrong, run="by-url-refused"))
    assert server.url in str(refused.value) and wrong not in str(refused.value)
    results = eval_bundle / "reports" / "eval" / "by-url-refused" / "results.jsonl"
    assert not results.exists() or not results.read_text().strip()  # no instance ran on a refused session
    board = json.loads((eval_bundle / "reports" / "eval" / "leaderboard.json").read_text())
    runs = {r.get("run") for r in board}
    assert "by-url" in runs and "by-url-refused" not in runs  # no empty row for a run that never ran
