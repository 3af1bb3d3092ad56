"""`orgseed upload` of the default org into an empty embedded org: time and API calls per object.

    .venv/bin/python benchmarks/bench_upload.py [--scale 1] [--json FILE]

The bundle is built once into output/bench/local_org_s<scale>/ (shared with bench_local_org.py). An empty org
(`orgseed serve --empty`, enterprise edition with Person Accounts and enough licences) runs in a process of
its own, so client and server do not share a GIL, as with a real org. The upload runs in this process without
Prefect (`flows.upload.upload_bundle`, the code `orgseed upload --no-prefect` runs): preflight, metadata
deploy, one stage per object, finish, reconcile, re-keyed tasks and the three-way answer check against the
org. Per object: records, seconds, records/s, and the API calls of its load stage, read from the org's own
count (`limits` DailyApiRequests, before and after; the `limits` calls themselves are subtracted).
Targets (issue 12): at most 6 API calls per object; the default bundle uploaded in under 2 minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_local_org import build  # noqa: E402

from flows.upload import UploadOptions, upload_bundle  # noqa: E402
from orgs.salesforce.connect import OrgOptions  # noqa: E402


def serve_empty(state: Path) -> tuple[subprocess.Popen[str], str, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flows.cli",
            "serve",
            "--empty",
            str(state),
            "--edition",
            "enterprise",
            "--person-accounts",
            "--licenses",
            "100000",
            "--token",
            "bench-token",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = ca = None
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (url and ca):
        line = proc.stdout.readline()
        if m := re.match(r"export ORGSEED_INSTANCE_URL=(\S+)", line):
            url = m.group(1)
        if m := re.match(r"export REQUESTS_CA_BUNDLE=(\S+)", line):
            ca = m.group(1)
    if not (url and ca):
        proc.kill()
        raise SystemExit("the empty org did not start")
    return proc, url, ca


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    source = build(args.scale)
    tmp = Path(tempfile.mkdtemp(prefix="orgseed-bench-upload-"))
    bundle = tmp / "bundle"
    shutil.copytree(source, bundle, ignore=shutil.ignore_patterns("uploads", "org.sqlite*"))
    proc, url, ca = serve_empty(tmp / "state")
    os.environ["REQUESTS_CA_BUNDLE"] = ca
    try:
        from simple_salesforce import Salesforce

        probe = Salesforce(instance_url=url, session_id="bench-token")

        def used() -> int:
            lim = probe.limits()["DailyApiRequests"]
            return int(lim["Max"]) - int(lim["Remaining"])

        # per object: (start time, calls at start), (last time, calls then, progress calls after the start)
        start: dict[str, tuple[float, int]] = {}
        last: dict[str, tuple[float, int, int]] = {}
        done_of: dict[str, int] = {}

        def progress(name: str, done: int, total: int) -> None:
            now, calls = time.perf_counter(), used()  # each used() is one limits call, counted by the org
            if total < 0:  # an object starts
                start[name] = (now, calls)
                last[name] = (now, calls, 0)
            else:
                last[name] = (now, calls, last[name][2] + 1)
                done_of[name] = done

        opts = UploadOptions(
            bundle=str(bundle), org=OrgOptions(instance_url=url, access_token="bench-token"), wait=0.2
        )
        t0 = time.perf_counter()
        result = asyncio.run(upload_bundle(opts, progress=progress))
        total = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, scale {args.scale:g}")
    print(f"{'object':24} {'records':>8} {'seconds':>8} {'records/s':>10} {'API calls':>9}")
    rows: list[dict[str, Any]] = []
    for name in start:  # in load order; LiveChatVisitor: made by the loader for the chats, one per chat
        (t0_, c0), (t1, c1, k) = start[name], last[name]
        records = done_of.get(name, 0)
        secs = t1 - t0_
        calls = c1 - c0 - k  # the limits calls made in between (and the last one) are not the object's
        rate = records / secs if secs > 0 else 0.0
        rows.append(
            {
                "object": name,
                "records": records,
                "seconds": secs,
                "records_per_s": rate,
                "calls": calls,
            }
        )
        print(f"{name:24} {records:8,} {secs:8.2f} {rate:10,.0f} {calls:9}")
    counted = [int(r["calls"]) for r in rows]
    records = sum(int(o["loaded"]) for o in result.objects)
    print(
        f"total: {records:,} records in {total:.1f} s end to end ({records / total:,.0f} records/s; preflight, "
        f"deploy, finish, reconcile, rekey and the answer check of {result.instances} instances included); "
        f"API calls per object: max {max(counted)}, mean {sum(counted) / len(counted):.1f} (target ≤ 6); "
        f"ok {result.ok}, {len(result.disagreements)} disagreements"
    )
    if args.json:
        args.json.write_text(json.dumps({"scale": args.scale, "seconds": total, "objects": rows}, indent=2))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
