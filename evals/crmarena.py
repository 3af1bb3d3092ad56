"""`orgseed crmarena`: CRMArena's *own* harness against a bundle served here, from the user's CRMArena checkout.

CRMArena's code is never part of orgseed: the user points `--checkout` at a clone of
SalesforceAIResearch/CRMArena and `--python` at an environment where its modules import (litellm, sacrebleu,
rouge, together, python-dotenv, simple-salesforce, pandas, tqdm, tenacity; its `datasets` dependency is not
needed). This module does the five steps running it against another org takes:

1. install: nothing to do beyond the packages above (CRMArena's pinned requirements conflict with each other);
2. tasks and schema come from the bundle, not from the hub download in `crm_sandbox/data/assets.py`;
3. the connector is pointed at the served org (`evals/crmarena_launcher.py` replaces its `sf_auth`);
4. the org's certificate is trusted (REQUESTS_CA_BUNDLE);
5. the answer format is the one each strategy's scorer compares against: scalars for `tool_call` /
   `tool_call_flex` (ToolEnv compares strings), one-element lists for `react` (the chat Evaluator reads
   `answer[0]`).

CRMArena's `act` strategy cannot run in its current harness (run_tasks.py hands it to the tool-calling agent
without tools), so it is refused here with that reason. Results land in
`reports/eval/crmarena-<model>-<strategy>/` beside orgseed's own runs, with a leaderboard row.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.leaderboard import board_row, markdown
from evals.runner import _atomic_write, collect_leaderboard
from evals.tasks import BundleTasks, external_tasks, resolve_tasks
from schemas.errors import UsageError

STRATEGIES = {"tool_call": "function-calling", "tool_call_flex": "function-calling", "react": "react"}
LAUNCHER = Path(__file__).with_name("crmarena_launcher.py")


@dataclass(frozen=True)
class HarnessSettings:
    bundle: str
    checkout: str
    model: str
    strategy: str = "tool_call"
    tasks: tuple[str, ...] = ()
    per_task: int | None = None
    base_url: str | None = None
    python: str | None = None  # the interpreter of the CRMArena environment (default: this one)
    max_turns: int = 20
    aided: bool = False
    provider: str = "openai"

    @property
    def run_name(self) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "_", f"crmarena-{self.model}-{self.strategy}")


@dataclass
class HarnessReport:
    run_dir: Path
    returncode: int
    rows: list[dict[str, Any]]
    board: dict[str, Any]
    log: Path


def check(s: HarnessSettings) -> Path:
    checkout = Path(s.checkout).expanduser().resolve()
    for rel in ("run_tasks.py", "crm_sandbox/env/connect_sandbox.py", "crm_sandbox/data/__init__.py"):
        if not (checkout / rel).is_file():
            raise UsageError(
                f"{checkout} is not a CRMArena checkout ({rel} is missing). Clone "
                "SalesforceAIResearch/CRMArena and pass its folder with --checkout (or CRMARENA_DIR).",
                path=str(checkout),
            )
    if s.strategy == "act":
        raise UsageError(
            "CRMArena's harness cannot run --strategy act: its run_tasks.py gives act to the tool-calling agent "
            "with no tools and stops. Use `orgseed eval --framework act` for Act."
        )
    if s.strategy not in STRATEGIES:
        raise UsageError(f"--strategy must be one of {', '.join(STRATEGIES)} (got {s.strategy!r}).")
    if not (Path(s.bundle) / "manifest.json").is_file():
        raise UsageError(f"{s.bundle} is not a bundle (no manifest.json); build one with `orgseed build`.")
    return checkout


def harness_tasks(s: HarnessSettings, bundle: BundleTasks) -> list[dict[str, Any]]:
    """The bundle's instances in CRMArena's format, with the answer format the strategy scores against."""
    raw = {int(t["idx"]): t for t in json.loads((Path(s.bundle) / "tasks" / "tasks.json").read_text("utf-8"))}
    out = []
    for inst in bundle.select(list(s.tasks) or None, s.per_task):
        t = dict(raw[inst.idx])
        answer: Any = None if inst.answer == ("None",) else inst.scalar_answer
        t["answer"] = [answer] if s.strategy == "react" else answer
        t["metadata"] = {"required": inst.required, "optional": inst.optional}
        out.append(t)
    return out


def run_harness(s: HarnessSettings, *, extra_env: dict[str, str] | None = None) -> HarnessReport:
    """Serve the bundle, run CRMArena's run_tasks.py on it through the launcher, and score its results."""
    checkout = check(s)
    if s.tasks:
        resolve_tasks(list(s.tasks))
    bundle = BundleTasks(s.bundle)
    tasks = harness_tasks(s, bundle)
    run_dir = Path(s.bundle) / "reports" / "eval" / s.run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    from orgs.local.serve import LocalServer

    with LocalServer(s.bundle) as server:
        config = {
            "checkout": str(checkout),
            "tasks": tasks,
            "schema": bundle.schema,
            "external_tasks": sorted(external_tasks()),
            "instance_url": server.url,
            "session_id": server.token,
            "argv": [
                "--model", s.model,
                "--agent_strategy", s.strategy,
                "--org_type", "original",
                "--llm_provider", s.provider,
                "--max_turns", str(s.max_turns),
                "--agent_eval_mode", "aided" if s.aided else "default",
                "--log_dir", str(run_dir.resolve()),
                "--reuse_results",
            ],
        }  # fmt: skip
        config_path = run_dir / "crmarena_config.json"
        _atomic_write(config_path, json.dumps(config))
        env = dict(os.environ)
        env["REQUESTS_CA_BUNDLE"] = str(server.cert_path)
        env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # litellm must not fetch its price list
        if s.base_url:
            env["OPENAI_BASE_URL"] = env["OPENAI_API_BASE"] = s.base_url
            env.setdefault("OPENAI_API_KEY", "not-needed")
        env.update(extra_env or {})
        log = run_dir / "crmarena.log"
        with log.open("w", encoding="utf-8") as fh:
            done = subprocess.run(
                [s.python or sys.executable, str(LAUNCHER), str(config_path.resolve())],
                cwd=checkout,
                env=env,
                stdout=fh,
                stderr=subprocess.STDOUT,
                check=False,
            )
    rows = read_harness_results(run_dir, s)
    scores = harness_scores(rows)
    row = board_row(f"{s.model} (CRMArena harness)", STRATEGIES[s.strategy], scores, run=s.run_name)
    _atomic_write(run_dir / "leaderboard.json", json.dumps(row, indent=2) + "\n")
    _atomic_write(run_dir / "leaderboard.md", markdown([row]))
    collect_leaderboard(Path(s.bundle))
    return HarnessReport(run_dir, done.returncode, rows, row, log)


def read_harness_results(run_dir: Path, s: HarnessSettings) -> list[dict[str, Any]]:
    """CRMArena's checkpoint file of this run (results_<model>_<strategy>_all.json), [] when absent."""
    path = run_dir / f"results_{s.model}_{s.strategy}_all.json"
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return []
    return data if isinstance(data, list) else []


def harness_scores(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | int]]:
    """Per task: mean reward × 100 (a fuzzy reward dict counts its f1), as orgseed's leaderboard does."""
    per: dict[str, list[float]] = {}
    for r in rows:
        reward = r.get("reward", 0)
        value = float(reward.get("f1", 0)) if isinstance(reward, dict) else float(reward or 0)
        per.setdefault(str(r.get("task_type")), []).append(value)
    return {t: {"score": round(100 * sum(v) / len(v), 1), "instances": len(v)} for t, v in per.items() if v}
