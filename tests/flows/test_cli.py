"""`orgseed build` through the real command line, as a user runs it."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from schemas.profile import PROFILE_DIR
from tests.conftest import REPO, SMALL_PROFILE


def orgseed(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=300,
    )


def _snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in folder.rglob("*")
        if p.is_file()
    }


def _profile(tmp_path: Path, old: str, new: str) -> str:
    text = (PROFILE_DIR / "crmarena.toml").read_text()
    assert old in text
    path = tmp_path / "p.toml"
    path.write_text(text.replace(old, new, 1))
    return str(path)


BAD_INPUTS: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("unknown profile", lambda t: ["--profile", "crmarna"], "Unknown profile `crmarna`. Did you mean `crmarena`?"),
    ("malformed TOML", lambda t: ["--profile", _profile(t, "Case = 977", "Case = = 977")], "malformed TOML"),
    ("negative count", lambda t: ["--profile", _profile(t, "Case = 977", "Case = -3")], "`counts.Case`: -3 is less than"),
    ("non-numeric count", lambda t: ["--profile", _profile(t, "Case = 977", 'Case = "lots"')], "is not of type 'integer'"),
    ("unknown object", lambda t: ["--profile", _profile(t, "Issue__c = 12\n", "Issue__c = 12\nTicket = 3\n")],
     "`counts.Ticket`: unknown object"),
    ("unknown field", lambda t: ["--profile", _profile(t, "[picklists.Case.Origin]", "[picklists.Case.Channel]")],
     "`Case` has no field `Channel`"),
    ("zero scale", lambda t: ["--scale", "0"], "--scale must be a positive number"),
    ("negative scale", lambda t: ["--scale", "-2"], "--scale must be a positive number"),
    ("zero shards", lambda t: ["--shards", "0"], "--shards must be between 1 and 256"),
    ("negative per-task", lambda t: ["--per-task", "-1"], "--per-task must be between 0"),
    ("unknown writer", lambda t: ["--writer", "gpt"], "Unknown --writer `gpt`"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "args", "message"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_gives_one_clear_error_and_touches_nothing(
    tmp_path: Path, label: str, args: Callable[[Path], list[str]], message: str
) -> None:
    out = tmp_path / "out"
    res = orgseed("build", "--no-prefect", "--out", str(out), *args(tmp_path))
    assert res.returncode == 2, res.stderr
    assert message in res.stderr
    assert "Traceback" not in res.stderr and res.stderr.count("error:") == 1
    assert not out.exists()


def test_non_numeric_scale_is_a_usage_error(tmp_path: Path) -> None:
    res = orgseed("build", "--no-prefect", "--out", str(tmp_path / "o"), "--scale", "big")
    assert (
        res.returncode == 2 and "Invalid value for '--scale'" in res.stderr and not (tmp_path / "o").exists()
    )


def test_a_non_empty_folder_needs_force_and_is_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "data").mkdir(parents=True)
    (out / "data" / "mine.csv").write_text("precious")
    (out / "notes.txt").write_text("keep me")
    before = _snapshot(out)
    res = orgseed("build", "--no-prefect", "--profile", str(SMALL_PROFILE), "--out", str(out))
    assert res.returncode == 2 and "holds no orgseed manifest.json" in res.stderr
    assert _snapshot(out) == before


def test_force_refuses_a_folder_that_is_not_a_bundle(tmp_path: Path) -> None:
    out = tmp_path / "home"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    res = orgseed("build", "--no-prefect", "--profile", str(SMALL_PROFILE), "--out", str(out), "--force")
    assert res.returncode == 2 and "only replaces its own bundles, even with --force" in res.stderr
    assert (out / "thesis.tex").read_text() == "years of work"


def test_build_in_process_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    res = orgseed(
        "build",
        "--no-prefect",
        "--profile",
        str(SMALL_PROFILE),
        "--out",
        str(out),
        "--scale",
        "0.5",
        "--seed",
        "7",
        "--per-task",
        "0",
    )
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "ERROR" not in res.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["seed"] == 7 and manifest["scale"] == 0.5
    assert manifest["tasks"] is None and not any((out / "tasks").iterdir())  # --per-task 0: a data-only org
    assert manifest["counts"]["Case"] == 75 and manifest["counts"]["Product2"] == 60
    assert "CaseHistory__c" in res.stdout and "records/s" in res.stdout
    # A rebuild over an existing bundle needs --force, and with it gives the same data.
    again = orgseed("build", "--no-prefect", "--profile", str(SMALL_PROFILE), "--out", str(out), "--scale", "0.5",
                    "--seed", "7", "--force", "--per-task", "0")  # fmt: skip
    assert again.returncode == 0
    assert json.loads((out / "manifest.json").read_text())["data_sha256"] == manifest["data_sha256"]


def test_build_through_prefect_is_quiet_and_identical(tmp_path: Path, small_bundle: Path) -> None:
    out = tmp_path / "prefect"
    res = orgseed("build", "--profile", str(SMALL_PROFILE), "--out", str(out), "--shards", "2")
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip() == ""
    mine = json.loads((out / "manifest.json").read_text())
    assert mine["build"]["engine"] == "prefect"
    assert mine["data_sha256"] == json.loads((small_bundle / "manifest.json").read_text())["data_sha256"]


def test_build_on_a_dask_cluster_is_quiet_and_identical(tmp_path: Path, small_bundle: Path) -> None:
    """Shard jobs run in two Dask worker processes that rebuild their context from the bundle's work folder.
    Port 8787, Dask's default for a scheduler's HTTP server, is held busy meanwhile, as another cluster would
    hold it: the build stays quiet."""
    out = tmp_path / "dask"
    with contextlib.ExitStack() as held:
        busy = held.enter_context(socket.socket())
        with contextlib.suppress(OSError):  # already held by something else: busy all the same
            busy.bind(("", 8787))
            busy.listen()
        res = orgseed(
            "build", "--profile", str(SMALL_PROFILE), "--out", str(out), "--runner", "dask", "--shards", "2"
        )
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip() == ""
    mine = json.loads((out / "manifest.json").read_text())
    assert mine["build"]["runner"] == "dask"
    assert mine["data_sha256"] == json.loads((small_bundle / "manifest.json").read_text())["data_sha256"]
    assert mine["files"] == json.loads((small_bundle / "manifest.json").read_text())["files"]
    assert not (out / ".work").exists()


def test_help_reads_like_a_click_tool() -> None:
    """Flags (and --help) take no value, so their help shows none; options that take one show its type."""
    res = orgseed("build", "--help", env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    lines = {line.split()[0]: line for line in res.stdout.splitlines() if line.strip().startswith("--")}
    for flag in ("--help", "--no-cache", "--dry-run", "--no-prefect"):
        assert lines[flag].split()[1][0] not in "<[", lines[flag]  # the help text follows the flag
    assert lines["--force"].split()[:3] == ["--force", "/", "--no-force"]
    assert "<bool>" not in res.stdout
    # value options show Click's metavars; closed sets list their choices
    assert [lines[o].split()[1] for o in ("--seed", "--scale", "--profile", "--out")] == [
        "INTEGER",
        "FLOAT",
        "TEXT",
        "PATH",
    ]
    assert "--runner <threads|dask>" in res.stdout


def test_every_value_option_of_every_command_shows_a_click_metavar() -> None:
    top = orgseed("--help", env={**os.environ, "COLUMNS": "200"})
    commands = [line.split()[0] for line in top.stdout.split("Commands:")[1].splitlines() if line.strip()]
    assert "build" in commands and "eval" in commands
    for command in commands:
        res = orgseed(command, "--help", env={**os.environ, "COLUMNS": "200"})
        assert res.returncode == 0, res.stderr
        for line in res.stdout.splitlines():
            words = line.split()
            if words and words[0].startswith("--") and len(words) > 1 and words[1].startswith("<"):
                assert "|" in words[1], f"orgseed {command}: {line.strip()}"  # only choice lists use <a|b>


def test_the_command_leaves_its_heap_frozen_for_the_process_exit() -> None:
    """`orgseed` (flows.cli:main) freezes what the process holds once the command is done, so the interpreter's
    tear-down does not walk it with the cycle collector; the command's exit status is unchanged."""
    program = (
        "import gc\n"
        "from flows.cli import main\n"
        "before = gc.get_freeze_count()\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit as exc:\n"
        "    print('status', exc.code, before, gc.get_freeze_count())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    _, status, before, after = done.stdout.splitlines()[-1].split()
    assert status == "0" and int(before) == 0 and int(after) > 10_000
