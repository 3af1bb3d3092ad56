"""What generation's building process keeps after each object: resident memory against live allocations.

    nice -n 5 .venv/bin/python benchmarks/bench_heap_retained.py [--scale 100] [--until Case] [--malloc]

Generates the org in process (spilled frames, as a large build does; nothing written but the work folder)
and prints, after each object, the process's RSS, the bytes Python's small-object allocator (pymalloc) has
in use and how many of its 1 MiB arenas it holds. After `--until` (Case by default), the writer's memos
and the word-hash cache are let go and the C heap trimmed (`release_freed_memory`), and the same figures are
printed again: what RSS still holds beyond the live objects is memory freed but not given back.

`--malloc` runs the same in a child with PYTHONMALLOC=malloc (glibc malloc for every object: it hands free
4 KiB pages back on `malloc_trim`, where pymalloc gives back only whole empty arenas), for a side-by-side
figure; pymalloc's counts are then not printed. The time of each run is printed too: the allocator is a
trade of speed against memory given back.

What a build does about it: from 500,000 planned rows (Case from scale 512), an object like Case is made in
a child process (generator/pipeline.py `made_apart`), which gives all of it back when it ends. This script
generates as a build does: at --scale 100 every object is made in this process, which shows what is kept.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def pymalloc() -> str:
    """pymalloc's arenas and bytes in use (`sys._debugmallocstats`, read from its stderr output)."""
    if os.environ.get("PYTHONMALLOC") == "malloc":
        return ""
    r, w = os.pipe()
    saved = os.dup(2)
    os.dup2(w, 2)
    os.close(w)
    try:
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    chunks = []
    while chunk := os.read(r, 1 << 16):
        chunks.append(chunk)
    os.close(r)
    text = b"".join(chunks).decode()

    def get(key: str) -> int:
        found = re.search(re.escape(key) + r"\s*=\s*([\d,]+)", text)
        return int(found.group(1).replace(",", "")) if found else -1

    arenas, used = get("# arenas allocated current"), get("# bytes in allocated blocks")
    return f"pymalloc arenas {arenas:5d} (MiB), in use {used / 2**20:6.0f} MB"


def run(scale: float, until: str) -> None:
    import psutil

    from generator.pipeline import LocalExecutor, Progress, RunContext, RunSpec, generate, make_context
    from schemas import textsim
    from schemas.gcpause import release_freed_memory

    me = psutil.Process()
    spec = RunSpec("crmarena", 0, scale)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="orgseed-bench-heap-") as tmp:
        rc = RunContext(Path(tmp), spec, make_context(spec))

        def done(name: str, rows: int, seconds: float) -> None:
            rss = me.memory_info().rss / 2**20
            print(
                f"{name:<24} {rows:>9,} rows {seconds:7.1f} s   RSS {rss:6.0f} MB   {pymalloc()}", flush=True
            )
            if name == until:
                rc.forget_memos()
                textsim._WORD_HASH.clear()
                release_freed_memory()
                rss = me.memory_info().rss / 2**20
                print(f"{'  memos let go, trimmed':<50}   RSS {rss:6.0f} MB   {pymalloc()}", flush=True)
                raise _Stop

        with contextlib.suppress(_Stop):
            asyncio.run(
                generate(rc, LocalExecutor(), 1, lambda *a: None, Progress(on_object_done=done), spill=True)
            )
    print(f"generation to the end of {until}: {time.perf_counter() - t0:.1f} s")


class _Stop(Exception):
    pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=100.0)
    ap.add_argument(
        "--until", default="Case", help="the object after which the memos are let go and it stops"
    )
    ap.add_argument("--malloc", action="store_true", help="also run with PYTHONMALLOC=malloc, in a child")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run(args.scale, args.until)
        return
    print(
        f"scale {args.scale:g}, Python's default allocator (pymalloc), load average {os.getloadavg()[0]:.2f}"
    )
    run(args.scale, args.until)
    if args.malloc:
        print(
            f"\nscale {args.scale:g}, PYTHONMALLOC=malloc, load average {os.getloadavg()[0]:.2f}", flush=True
        )
        child = [sys.executable, __file__, "--scale", str(args.scale), "--until", args.until, "--child"]
        subprocess.run(child, env={**os.environ, "PYTHONMALLOC": "malloc"}, check=True)


if __name__ == "__main__":
    main()
