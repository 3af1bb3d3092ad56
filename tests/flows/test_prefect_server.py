"""`PREFECT_API_URL` pointed at a user's Prefect server records the build there: a server started by the fixture
(`prefect server start` on a free local port, its own PREFECT_HOME; no internet), `orgseed build` run as a
user runs it, and the flow run with every stage's task run read back through Prefect's client API."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SMALL_PROFILE
from tests.flows.test_cli import orgseed

STARTUP_SECONDS = 120  # migrations on a fresh home on a busy 2-core machine
RECORDING_SECONDS = 60
STAGES = {"world", "validate", "tasks", "tasks.check", "fidelity"}


def _every_stage(names: set[str]) -> bool:
    """The build's stages, the check through the org whole (one process) or in parts (shared with a sidecar)."""
    return names >= STAGES and bool({"tasks.check_api", "tasks.check_api/http"} & names)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def prefect_server(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp_path / "server-home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_API_URL": "",
    }
    log = (tmp_path / "server.log").open("w")
    # services stay on: the server records task runs from the events the build sends
    options = ["--no-ui", "--no-scheduler", "--no-late-runs", "--analytics-off"]
    argv = [
        sys.executable,
        "-m",
        "prefect",
        "server",
        "start",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *options,
    ]
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopped with everything it started, and only that
    )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"prefect server did not start: {(tmp_path / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def test_a_build_is_recorded_on_the_server_at_prefect_api_url(tmp_path: Path, prefect_server: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    out = tmp_path / "bundle"
    res = orgseed(
        "build", "--profile", str(SMALL_PROFILE), "--out", str(out), env={"PREFECT_API_URL": prefect_server}
    )
    assert res.returncode == 0, res.stderr
    with temporary_settings({PREFECT_API_URL: prefect_server}), get_client(sync_client=True) as client:
        flows = client.read_flows()
        runs = client.read_flow_runs()
        assert [f.name for f in flows] == ["orgseed-build"]
        assert len(runs) == 1
        run = runs[0]
        assert run.state is not None and run.state.is_completed()
        assert run.parameters["options"]["out"] == str(out)
        # Task runs reach the server as events, recorded by its services a moment later: wait for them.
        deadline = time.monotonic() + RECORDING_SECONDS
        while True:
            tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run.id])))
            names = {t.name for t in tasks}
            if _every_stage(names) and all(t.state is not None and t.state.is_final() for t in tasks):
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
    assert _every_stage(names), sorted(names)
    assert any(n.startswith("Account.structured[") for n in names), sorted(names)
    assert all(t.state is not None and t.state.is_completed() for t in tasks)
