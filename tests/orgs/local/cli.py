"""`orgseed serve` as a process of its own, for the tests that run the real CLI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from tests.conftest import REPO


def serve_cli(*args: str) -> subprocess.Popen[str]:
    """`orgseed serve ARGS...` started in the repository, its output piped."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "serve", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_snippet(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[str, str, list[str]]:
    """(instance URL, CA bundle, the lines read) from the snippet the server prints when it is up."""
    lines: list[str] = []
    url = ca = None
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline and not (url and ca):
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if m := re.match(r"export ORGSEED_INSTANCE_URL=(\S+)", line):
            url = m.group(1)
        if m := re.match(r"export REQUESTS_CA_BUNDLE=(\S+)", line):
            ca = m.group(1)
    assert url and ca, "".join(lines)
    return url, ca, lines
