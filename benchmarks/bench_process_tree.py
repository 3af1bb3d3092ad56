"""A build's memory, process by process: `orgseed build` run with every process of its tree sampled each second.

    nice -n 5 .venv/bin/python benchmarks/bench_process_tree.py --scale 300 [--out DIR] [--every 1] [--lines 60]
        [-- BUILD OPTIONS]

Options after `--` are passed to `orgseed build` in place of `--no-prefect`, e.g.
`-- --runner dask --dask-memory-limit 3GiB`: the Dask cluster's worker processes are then the build's
children too, and are sampled with it (named "worker"; without `--dask-address`, the local cluster's workers
are spawned by the building process).

A build runs in more than one process: the building process, the sidecar (validation, the org's store, the
task checks: flows/sidecar.py), in a large build the child that makes the cases (generator/pipeline.py
`made_apart`), and multiprocessing's resource tracker. A build's peak is the moment their sum is largest,
which is not each process's own peak: this prints that moment, what each process held then, each process's
own peak, and a timeline. RSS counts a page shared by two processes in both (a forked sidecar starts sharing
the building process's pages), so USS (the pages only that process holds) is printed too; psutil reads it
from /proc/PID/smaps, which takes a few milliseconds per process for a large one (the sampling's cost).

The bundle is built with `--no-prefect` into `--out` (a temporary folder by default, deleted after), and
its `data_sha256` and timings are printed from its manifest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Seen:
    pid: int
    kind: str
    first: float
    last: float = 0.0
    peak_rss: int = 0


def kind_of(proc: psutil.Process, root: int) -> str:
    if proc.pid == root:
        return "build"
    try:
        line = " ".join(proc.cmdline())
    except psutil.Error:
        return "?"
    if "resource_tracker" in line:
        return "tracker"
    if "prefect.server" in line:  # the Prefect engine's API server (not with --no-prefect)
        return "prefect server"
    return "spawned" if "spawn_main" in line else "forked"


def sample(root: psutil.Process) -> list[tuple[psutil.Process, int, int]]:
    got: list[tuple[psutil.Process, int, int]] = []
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return got
    for proc in procs:
        try:
            mem = proc.memory_full_info()
        except psutil.Error:
            continue
        got.append((proc, round(mem.rss / 2**20), round(mem.uss / 2**20)))
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=30.0)
    ap.add_argument("--out", help="the bundle's folder (kept); a temporary one by default")
    ap.add_argument("--every", type=float, default=1.0, help="seconds between samples")
    ap.add_argument("--lines", type=int, default=60, help="timeline lines printed")
    ap.add_argument(
        "build_options", nargs="*", help="after `--`: options for `orgseed build` (default --no-prefect)"
    )
    args = ap.parse_args()
    dask = any(o in ("dask", "--runner=dask") for o in args.build_options)
    tmp = None if args.out else tempfile.mkdtemp(prefix="orgseed-bench-tree-")
    out = Path(args.out) if args.out else Path(tmp or ".") / "bundle"
    # the CLI's entry point, run by this interpreter (the project's environment)
    cli = [sys.executable, "-c", "import sys; from flows.cli import main; sys.exit(main())"]
    options = args.build_options or ["--no-prefect"]
    command = [*cli, "build", "--scale", f"{args.scale:g}", *options, "--force", "--out", str(out)]
    print(
        f"# orgseed {' '.join(command[3:])}; load average {os.getloadavg()[0]:.2f} at start; sampled every {args.every:g} s"
    )
    seen: dict[int, Seen] = {}
    moments: list[tuple[float, list[tuple[int, int, int]]]] = []
    build: subprocess.Popen[bytes] | None = None
    # the build's messages go to a file, not a pipe this loop would have to drain while it samples
    logs = Path(tempfile.mkdtemp(prefix="orgseed-bench-tree-log-"))
    try:
        with open(logs / "stderr.txt", "wb") as errors:
            build = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=errors)
            root = psutil.Process(build.pid)
            t0 = time.monotonic()
            while build.poll() is None:
                t = round(time.monotonic() - t0, 1)
                now = []
                for proc, rss, uss in sample(root):
                    s = seen.get(proc.pid)
                    if s is None:
                        s = seen[proc.pid] = Seen(proc.pid, kind_of(proc, build.pid), t)
                    s.last, s.peak_rss = t, max(s.peak_rss, rss)
                    now.append((proc.pid, rss, uss))
                moments.append((t, now))
                time.sleep(args.every)
        err = (logs / "stderr.txt").read_text(encoding="utf-8", errors="replace")
        print(f"exit {build.returncode}" + (f": {err.strip()[-400:]}" if build.returncode else ""))
        if not moments:
            return
        helpers = [s for s in seen.values() if s.kind in ("forked", "spawned")]
        if dask:
            # the local cluster's workers: the spawned processes that live through most of the build
            span = moments[-1][0]
            for s in helpers:
                if s.last - s.first >= 0.5 * span:
                    s.kind = "worker"
        elif helpers:
            # the sidecar: the longest-lived process the build forked or spawned
            max(helpers, key=lambda s: s.last - s.first).kind = "sidecar"
        for s in seen.values():
            if s.kind in ("forked", "spawned"):
                s.kind = f"child {s.first:.0f}-{s.last:.0f} s"
        t, now = max(moments, key=lambda m: sum(r for _, r, _ in m[1]))
        parts = ", ".join(f"{seen[p].kind} {r:,} (USS {u:,})" for p, r, u in now)
        print(f"peak of the tree's RSS: {sum(r for _, r, _ in now):,} MB at {t:.0f} s: {parts}")
        t, now = max(moments, key=lambda m: sum(u for _, _, u in m[1]))
        parts = ", ".join(f"{seen[p].kind} {u:,}" for p, _, u in now)
        print(f"peak of the tree's USS: {sum(u for _, _, u in now):,} MB at {t:.0f} s: {parts}")
        # the largest moment while a child (the cases' maker) lives, and the largest with none alive: a build's
        # peak moves between them as one or the other is made smaller
        for label, with_child in (("while a child lives", True), ("with no child alive", False)):
            some = [
                m for m in moments if any(seen[p].kind.startswith("child") for p, _, _ in m[1]) == with_child
            ]
            if some and any(s.kind.startswith("child") for s in seen.values()):
                t, now = max(some, key=lambda m: sum(r for _, r, _ in m[1]))
                parts = ", ".join(f"{seen[p].kind} {r:,}" for p, r, _ in now)
                print(f"  largest {label}: {sum(r for _, r, _ in now):,} MB at {t:.0f} s: {parts}")
        for s in seen.values():
            print(
                f"  {s.kind:<22} pid {s.pid:>7}  {s.first:7.0f}-{s.last:7.0f} s  own peak RSS {s.peak_rss:>6,} MB"
            )
        manifest = out / "manifest.json"
        if manifest.is_file():
            m = json.loads(manifest.read_text())
            timings = m.get("timings", {})
            print(
                f"data_sha256 {m.get('data_sha256')}; total {timings.get('total_seconds')} s, generation "
                f"{timings.get('generation_seconds')} s"
            )
        print("timeline (s: process RSS MB):")
        step = max(1, len(moments) // max(1, args.lines))
        for t, now in moments[::step]:
            print(
                f"{t:7.0f}  "
                + " | ".join(f"{seen[p].kind} {r:,}" for p, r, _ in now if seen[p].kind != "tracker")
            )
    finally:
        # interrupted: the build does not outlive the benchmark
        if build is not None and build.poll() is None:
            build.terminate()
            build.wait()
        shutil.rmtree(logs, ignore_errors=True)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
