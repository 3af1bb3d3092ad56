"""`orgseed crmarena`: CRMArena's own harness against the served bundle.

Without a checkout, a stand-in checkout (written here, a few lines shaped like CRMArena's modules) checks
the launcher's steps: tasks and schema replace the hub download, the connector reaches the served org over
HTTPS with its certificate trusted, the answer format follows the strategy. With `CRMARENA_DIR` pointing at a
real checkout (and `CRMARENA_PYTHON` at a Python where its modules import), CRMArena's run_tasks.py itself
runs against the bundle with the fake OpenAI server scripted as an oracle agent, and must score every
instance 1."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from evals.crmarena import HarnessSettings, check, harness_tasks, run_harness
from evals.tasks import BundleTasks
from schemas.errors import UsageError
from tests.fakes.agent_script import ScriptedAgent
from tests.fakes.openai_server import FakeOpenAI

STAND_IN = {
    "crm_sandbox/__init__.py": "",
    "crm_sandbox/data/__init__.py": "",
    "crm_sandbox/env/__init__.py": "",
    "crm_sandbox/env/connect_sandbox.py": """
        from simple_salesforce import Salesforce

        class SalesforceConnector:
            def __init__(self, auth=None, org_type="original"):
                auth = auth or self.sf_auth(org_type)
                self.sf = Salesforce(instance_url=auth["instance_url"], session_id=auth["session_id"])

            @staticmethod
            def sf_auth(org_type):
                raise ValueError("No Salesforce credentials found in environment variables!")
    """,
    "run_tasks.py": """
        import argparse, json, os
        from crm_sandbox.data.assets import TASKS_ORIGINAL, SCHEMA_ORIGINAL
        from crm_sandbox.env.connect_sandbox import SalesforceConnector

        p = argparse.ArgumentParser()
        for a in ("--model", "--agent_strategy", "--org_type", "--llm_provider", "--max_turns", "--agent_eval_mode", "--log_dir"):
            p.add_argument(a)
        p.add_argument("--reuse_results", action="store_true")
        args = p.parse_args()
        sf = SalesforceConnector(org_type=args.org_type).sf
        n = sf.query("SELECT COUNT() FROM Case")["totalSize"]
        rows = [{"task_id": t["idx"], "task_type": t["task"], "gt_answer": t["answer"], "reward": 1,
                 "agent_info": {"cases": n, "objects": len(SCHEMA_ORIGINAL)}} for t in TASKS_ORIGINAL]
        with open(os.path.join(args.log_dir, f"results_{args.model}_{args.agent_strategy}_all.json"), "w") as fh:
            json.dump(rows, fh)
    """,
}


def _stand_in(root: Path) -> Path:
    for rel, text in STAND_IN.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def test_the_launcher_serves_tasks_schema_and_org_to_a_checkout(eval_bundle: Path, tmp_path: Path) -> None:
    checkout = _stand_in(tmp_path / "CRMArena")
    s = HarnessSettings(
        bundle=str(eval_bundle), checkout=str(checkout), model="m", strategy="react", per_task=1
    )
    report = run_harness(s)  # HTTPS: orgseed trusts the served certificate through REQUESTS_CA_BUNDLE
    assert report.returncode == 0, report.log.read_text()
    assert len(report.rows) == 9 and report.board["Overall"] == 100.0
    cases = sum(1 for _ in (eval_bundle / "data" / "Case.csv").open()) - 1
    assert {r["agent_info"]["cases"] for r in report.rows} == {cases}  # the org answered, over HTTPS
    assert {r["agent_info"]["objects"] for r in report.rows} == {16}
    assert all(isinstance(r["gt_answer"], list) for r in report.rows)  # react scores lists


def test_answers_are_scalars_for_tool_calling_and_lists_for_react(eval_bundle: Path, tmp_path: Path) -> None:
    bundle = BundleTasks(eval_bundle)
    for strategy, shape in (("tool_call", (str, type(None))), ("react", (list,))):
        s = HarnessSettings(bundle=str(eval_bundle), checkout=str(tmp_path), model="m", strategy=strategy)
        tasks = harness_tasks(s, bundle)
        assert len(tasks) == len(bundle.instances)
        assert all(isinstance(t["answer"], shape) for t in tasks)
    nones = [t for t in harness_tasks(HarnessSettings(str(eval_bundle), str(tmp_path), "m", "react"), bundle)
             if t["answer"] == [None]]  # fmt: skip
    assert nones  # CRMArena's Evaluator turns [None] into "None"


def test_what_cannot_run_is_refused(eval_bundle: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a CRMArena checkout"):
        check(HarnessSettings(str(eval_bundle), str(tmp_path), "m"))
    checkout = _stand_in(tmp_path / "CRMArena")
    with pytest.raises(UsageError, match="cannot run --strategy act"):
        check(HarnessSettings(str(eval_bundle), str(checkout), "m", strategy="act"))


@pytest.mark.skipif(not os.environ.get("CRMARENA_DIR"), reason="set CRMARENA_DIR to a CRMArena checkout")
@pytest.mark.parametrize("strategy", ["tool_call", "react"])
def test_crmarenas_own_harness_scores_an_oracle_agent_1_everywhere(
    eval_bundle: Path, fake_llm: FakeOpenAI, strategy: str
) -> None:
    fake_llm.reset(agent=ScriptedAgent(eval_bundle / "tasks" / "tasks.json", "oracle"))
    s = HarnessSettings(
        bundle=str(eval_bundle),
        checkout=os.environ["CRMARENA_DIR"],
        model="gpt-4o-2024-08-06",  # a name CRMArena's tool-calling agent accepts for provider openai
        strategy=strategy,
        per_task=1,
        base_url=fake_llm.base_url,
        python=os.environ.get("CRMARENA_PYTHON"),
    )
    report = run_harness(s, extra_env={"OPENAI_API_KEY": "sk-test"})
    log = report.log.read_text()
    assert report.returncode == 0, log[-3000:]
    assert len(report.rows) == 9, log[-3000:]
    bad = [(r["task_type"], r["reward"], r["gt_answer"]) for r in report.rows if r["reward"] not in (1, {"em": True})
           and not (isinstance(r["reward"], dict) and r["reward"].get("f1") == 1.0)]  # fmt: skip
    assert not bad, bad
    assert report.board["Overall"] == 100.0
    assert fake_llm.stats.requests >= 18
    assert json.loads((report.run_dir / "leaderboard.json").read_text())["model"].endswith(
        "(CRMArena harness)"
    )
