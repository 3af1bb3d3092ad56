"""`orgseed eval` on the command line: exit codes, files, the printed leaderboard, the dry run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app
from tests.conftest import REPO


def _orgseed(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "ORGSEED_CACHE_DIR": str(cwd / "cache"), "HOME": str(cwd)},
    )  # fmt: skip


def test_eval_writes_results_and_prints_the_leaderboard(eval_bundle: Path, tmp_path: Path) -> None:
    done = _orgseed("eval", str(eval_bundle), "--agent", "none", "--framework", "act", "--per-task", "2",
                    "--run", "cli-none", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "NCR" in done.stdout and "none (baseline)" in done.stdout and "18 of 18 instances" in done.stdout
    run = eval_bundle / "reports" / "eval" / "cli-none"
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 18 and {"answer", "reward", "turns", "tool_calls", "tokens", "cost_usd", "latency_s",
                                 "trajectory"} <= set(rows[0])  # fmt: skip
    assert json.loads((run / "leaderboard.json").read_text())["framework"] == "Act"
    assert (run / "leaderboard.md").read_text().count("\n") == 3


def test_bad_input_exits_2_and_touches_nothing(eval_bundle: Path, tmp_path: Path) -> None:
    before = sorted(p.name for p in (eval_bundle / "reports").iterdir())
    runner = CliRunner()
    for args, says in (
        (["--framework", "function-calling"], "--model"),  # neither a model nor a baseline
        (["--agent", "oracle", "--framework", "chain-of-thought"], "--framework"),
        (["--agent", "oracle", "--tasks", "XYZ"], "XYZ"),
        (["--agent", "psychic"], "--agent"),
        (["--agent", "none", "--model", "gpt-4o"], "not both"),
    ):
        done = runner.invoke(app, ["eval", str(eval_bundle), *args])
        assert done.exit_code == 2, (args, done.output)
        assert "error:" in done.output and says in done.output
    missing = runner.invoke(app, ["eval", str(tmp_path / "nope"), "--agent", "none"])
    assert missing.exit_code == 2 and "manifest.json" in missing.output
    assert sorted(p.name for p in (eval_bundle / "reports").iterdir()) == before


def test_dry_run_estimates_and_sends_nothing(eval_bundle: Path, tmp_path: Path) -> None:
    done = _orgseed("eval", str(eval_bundle), "--model", "gpt-4o-mini", "--framework", "react", "--tasks", "TII,BRI",
                    "--per-task", "3", "--base-url", "http://127.0.0.1:9/v1", "--run", "dry", "--dry-run", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "nothing sent" in done.stdout and "TII" in done.stdout and "BRI" in done.stdout
    total = next(line for line in done.stdout.splitlines() if "total" in line)
    assert "│" in total and "6 " in total  # six instances
    assert not (eval_bundle / "reports" / "eval" / "dry").exists()
