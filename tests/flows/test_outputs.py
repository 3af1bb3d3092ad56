"""Outputs are sacred (issue 10 items 1-2): `--force` replaces only orgseed's own bundles, a build is staged
beside `--out` and swapped in when complete, and an unfinished bundle is refused by validate, serve and tasks.
Each reproducer of the issue is a test here, run through the real command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from orgs.bundle import staging_path
from tests.conftest import REPO, SMALL_PROFILE, copy_bundle
from tests.flows.test_cli import orgseed


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (symlinks not followed) with its bytes, and every folder."""
    out: dict[str, bytes] = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = b"<dir>" if p.is_dir() else p.read_bytes()
    return out


def build(out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return orgseed(
        "build", "--no-prefect", "--profile", str(SMALL_PROFILE), "--out", str(out), *extra, env=env
    )


def test_force_leaves_a_folder_with_data_git_and_documents_alone(tmp_path: Path) -> None:
    """The issue's reproducer: `mkdir -p x/{data,.git,Documents}; orgseed build ... --out x --force`."""
    x = tmp_path / "x"
    for sub in ("data", ".git", "Documents"):
        (x / sub).mkdir(parents=True)
    (x / "Documents" / "letter.txt").write_text("dear")
    (x / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    before = snapshot(x)
    res = build(x, "--scale", "0.2", "--per-task", "20", "--force")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "only replaces its own bundles" in res.stderr and "Nothing was changed" in res.stderr
    assert snapshot(x) == before
    assert not staging_path(x).exists()


def test_force_refuses_a_bundle_that_holds_foreign_files(tmp_path: Path, small_bundle: Path) -> None:
    """A real manifest is not enough: a bundle folder someone put their own files in is not replaced."""
    out = copy_bundle(small_bundle, tmp_path / "b")
    (out / "notes.md").write_text("mine")
    before = snapshot(out)
    res = build(out, "--force", "--per-task", "0")
    assert res.returncode == 2 and "notes.md" in res.stderr
    assert snapshot(out) == before


@pytest.mark.parametrize("where", ["home", "root", "cwd"])
def test_home_root_and_current_directory_are_refused_outright(tmp_path: Path, where: str) -> None:
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    (home / "data" / "taxes.csv").write_text("2025,1\n")
    target = {"home": str(home), "root": "/", "cwd": str(REPO)}[where]
    before = snapshot(home)
    res = build(Path(target), "--force", env={"HOME": str(home)})
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    expected = {"home": "home directory", "root": "filesystem root", "cwd": "current directory"}[where]
    assert expected in res.stderr
    assert snapshot(home) == before
    assert not staging_path(Path(target).resolve()).exists() or where == "root"


def test_a_bad_scale_leaves_the_bundle_whole(tmp_path: Path, small_bundle: Path) -> None:
    """The issue's reproducer: `--scale 1e300 --force --out <bundle>` wiped the bundle, then failed (exit 1)."""
    out = copy_bundle(small_bundle, tmp_path / "b")
    before = snapshot(out)
    for bad in (
        ["--scale", "1e300"],
        ["--shards", "100000"],
        ["--seed", str(2**63)],
        ["--per-task", "1000000"],
    ):
        res = build(out, "--force", *bad)
        assert res.returncode == 2 and "Traceback" not in res.stderr, (bad, res.stderr)
        assert bad[0] in res.stderr
        assert snapshot(out) == before
        assert not staging_path(out).exists()


def _runs_build_of(cmdline: Path, out: Path) -> bool:
    """Whether the process of /proc/<pid>/cmdline runs a build into `out` (gone meanwhile: no)."""
    try:
        args = cmdline.read_bytes().split(b"\0")
    except OSError:
        return False
    return b"build" in args and os.fsencode(out) in args


def test_a_killed_rebuild_leaves_the_old_bundle_whole_and_the_next_build_cleans_up(
    tmp_path: Path, small_bundle: Path
) -> None:
    out = copy_bundle(small_bundle, tmp_path / "b")
    (out / "tls").mkdir(exist_ok=True)  # the served session bundle may hold one already
    (out / "tls" / "cert.pem").write_text("the certificate clients trust\n")
    before = snapshot(out)
    staging = staging_path(out)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flows.cli",
            "build",
            "--no-prefect",
            "--profile",
            str(SMALL_PROFILE),
            "--out",
            str(out),
            "--force",
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    deadline = time.monotonic() + 120
    while not (staging / "data").exists() or not any((staging / "data").iterdir()):
        assert proc.poll() is None, "the build ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # no process of that build is left behind (its sidecar ends with it)
    while left := [p for p in Path("/proc").glob("[0-9]*/cmdline") if _runs_build_of(p, out)]:
        assert time.monotonic() < deadline, f"left running: {left}"
        time.sleep(0.1)
    assert snapshot(out) == before  # the old bundle is whole
    assert staging.exists()  # and what the killed build wrote is beside it, not in it
    # The next build removes the stale staging folder and swaps the new bundle in, keeping the certificate.
    res = build(out, "--force")
    assert res.returncode == 0, res.stderr
    assert "An unfinished earlier build" in res.stderr and "it is removed" in res.stderr
    assert not staging.exists()
    assert not any(p.name.startswith(".b.") for p in tmp_path.iterdir())
    old = json.loads(before["manifest.json"])
    new = json.loads((out / "manifest.json").read_bytes())
    assert new["status"] == "complete" and new["data_sha256"] == old["data_sha256"]
    assert (out / "tls" / "cert.pem").read_text() == "the certificate clients trust\n"


def test_a_staging_folder_orgseed_did_not_make_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "b"
    staging = staging_path(out)
    staging.mkdir()
    (staging / "yours.txt").write_text("x")
    res = build(out, "--per-task", "0")
    assert res.returncode == 2 and "was not made by orgseed" in res.stderr
    assert (staging / "yours.txt").read_text() == "x" and not out.exists()


@pytest.mark.parametrize("status", ["in_progress", "failed", "invalid"])
@pytest.mark.parametrize("command", ["validate", "serve", "tasks"])
def test_an_unfinished_bundle_is_refused(
    tmp_path: Path, small_bundle: Path, command: str, status: str
) -> None:
    out = copy_bundle(small_bundle, tmp_path / "b")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["status"] = status
    (out / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot(out)
    args = [command, str(out)] + (["--port", "0"] if command == "serve" else [])
    res = subprocess.run(
        [sys.executable, "-m", "flows.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"/status is '{status}', not 'complete'" in " ".join(res.stderr.split())
    assert snapshot(out) == before


def kill_when(proc: subprocess.Popen[bytes], ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 180
    while not ready():
        assert proc.poll() is None, "the build ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def staged_stages(staging: Path) -> dict[str, str]:
    try:
        return dict(json.loads((staging / "manifest.json").read_text()).get("stages") or {})
    except (OSError, ValueError):  # not written yet, or caught mid-replace
        return {}


def test_resume_continues_a_killed_build_and_ends_byte_identical(tmp_path: Path, small_bundle: Path) -> None:
    """Killed once its data is generated, `--resume` skips generation and ends with the same bytes as an
    uninterrupted build (the session's small bundle: same profile, seed and scale)."""
    out = tmp_path / "b"
    staging = staging_path(out)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flows.cli",
            "build",
            "--no-prefect",
            "--profile",
            str(SMALL_PROFILE),
            "--out",
            str(out),
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kill_when(proc, lambda: "generate" in staged_stages(staging))
    assert not out.exists() and staging.exists()
    res = build(out, "--resume")
    assert res.returncode == 0, res.stderr
    assert not staging.exists()
    manifest = json.loads((out / "manifest.json").read_text())
    reference = json.loads((small_bundle / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["build"]["resumed_from"][0] == "generate"  # generation was not run again
    assert manifest["data_sha256"] == reference["data_sha256"]
    for rel in reference["files"]:  # every data, latent and task file, byte for byte
        assert (out / rel).read_bytes() == (small_bundle / rel).read_bytes(), rel


def test_resume_of_another_run_starts_afresh(tmp_path: Path) -> None:
    out = tmp_path / "b"
    staging = staging_path(out)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flows.cli",
            "build",
            "--no-prefect",
            "--profile",
            str(SMALL_PROFILE),
            "--out",
            str(out),
            "--per-task",
            "0",
            "--seed",
            "1",
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kill_when(proc, lambda: "generate" in staged_stages(staging))
    res = build(out, "--resume", "--per-task", "0", "--seed", "2")  # another seed: other data
    assert res.returncode == 0, res.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 2 and "resumed_from" not in manifest["build"]
