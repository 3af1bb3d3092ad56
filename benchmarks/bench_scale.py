"""Scale: per build stage, time, records/s and peak memory, at scales 1, 10, 100 (and a Dask run).

    nice -n 10 .venv/bin/python benchmarks/bench_scale.py [--scales 1 10 100] [--dask-scale 10]
        [--dask-workers 2] [--dask-memory-limit 1GiB] [--json benchmarks/results/bench_scale.json]

Each build is `orgseed build --scale S` in a child process (`--no-prefect`: in-process; the Dask run:
`--runner dask --shards W --dask-memory-limit M`, a local cluster of W memory-limited worker processes).
Every 0.1 s this script sums the resident set size (RSS) of the child and all its descendants (the Dask
scheduler, nannies and workers, the answer check's worker processes) with psutil; a stage's peak memory is
the largest sum sampled while it ran. The stages and their start times come from the bundle's manifest
(`/timings/stages`, written by flows/build.py): generate (synthesis, texts and CSV writing), world,
validate, tasks (building the instances), tasks.check (the independent re-derivation from the CSVs),
tasks.check_api (the store build, the SOQL check in process, the HTTP sample). records/s = all rows of
the 16 objects / the stage's seconds.

The scale-1,000 line is extrapolated, never measured: each stage's time and the peak memory are fitted as
a·scale^b through the two largest scales measured and evaluated at 1,000. It says what this code would need
on this machine, assuming nothing changes its growth beyond those scales.

Prints a table; writes every figure (with the machine and the commands) as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parent.parent
STAGES = ("generate", "world", "validate", "tasks", "tasks.check", "tasks.check_api")


class TreeSampler:
    """RSS of a process and its descendants, sampled on a thread: (epoch seconds, bytes) pairs."""

    def __init__(self, pid: int, every: float = 0.1) -> None:
        self.root = psutil.Process(pid)
        self.every = every
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                break
            for p in procs:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    continue
            self.samples.append((time.time(), total))
            self._stop.wait(self.every)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, start: float | None = None, end: float | None = None) -> int:
        """The largest sample taken between `start` and `end`; for a stage shorter than the sampling
        interval, the first sample after it started."""
        inside = [
            rss for t, rss in self.samples if (start is None or t >= start) and (end is None or t <= end)
        ]
        if not inside and start is not None:
            inside = [rss for t, rss in self.samples if t >= start][:1]
        return max(inside, default=0)


def build(scale: float, out: Path, extra: list[str]) -> dict[str, Any]:
    """One `orgseed build` in a child process, sampled; its figures per stage."""
    cmd = [
        str(REPO / ".venv" / "bin" / "orgseed"),
        "build",
        "--scale",
        f"{scale:g}",
        "--out",
        str(out),
        "--force",
        *extra,
    ]
    env = {**os.environ, "PREFECT_HOME": str(out.parent / "prefect-home")}
    t = time.perf_counter()
    child = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    sampler = TreeSampler(child.pid)
    stdout, stderr = child.communicate()
    sampler.stop()
    wall = time.perf_counter() - t
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({child.returncode}):\n{stderr[-3000:]}{stdout[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    records = sum(manifest["counts"].values())
    spans = manifest["timings"].get("stages", {})
    stages: dict[str, dict[str, Any]] = {}
    for name in STAGES:
        span = spans.get(name)
        if span is None:
            continue
        start, seconds = float(span["start"]), float(span["seconds"])
        stages[name] = {
            "seconds": seconds,
            "records_per_s": round(records / seconds) if seconds > 0 else None,
            "peak_mb": round(sampler.peak(start, start + seconds) / 2**20),
        }
    api = (manifest.get("tasks") or {}).get("api_check") or {}
    parts = {n: len(e["parts"]) for n, e in manifest["objects"].items() if "parts" in e}
    return {
        "scale": scale,
        "command": " ".join(cmd[1:]),
        "records": records,
        "wall_seconds": round(wall, 2),
        "records_per_s": round(records / wall),
        "peak_mb": round(sampler.peak() / 2**20),
        "stages": stages,
        "api_check": api,
        "parts": parts,
        "data_sha256": manifest["data_sha256"],
    }


def extrapolate(runs: list[dict[str, Any]], target: float) -> dict[str, Any] | None:
    """Two guesses at `target` from the two largest in-process scales measured: a·scale^b through both
    (per stage; the build is the sum of its stages), and linear from the largest (its figures × target/scale).
    Peak memory likewise. Neither is a measurement."""
    measured = sorted((r for r in runs if r.get("runner") in (None, "in-process")), key=lambda r: r["scale"])
    if len(measured) < 2:
        return None
    lo, hi = measured[-2], measured[-1]
    ratio = target / hi["scale"]

    def fit(y_lo: float, y_hi: float) -> tuple[float, float]:
        if y_lo <= 0 or y_hi <= 0:
            return 0.0, 0.0
        b = math.log(y_hi / y_lo) / math.log(hi["scale"] / lo["scale"])
        return y_hi * ratio**b, b

    stages = {}
    for name in STAGES:
        if name in lo["stages"] and name in hi["stages"]:
            value, b = fit(lo["stages"][name]["seconds"], hi["stages"][name]["seconds"])
            linear = hi["stages"][name]["seconds"] * ratio
            stages[name] = {
                "seconds": round(value, 1),
                "exponent": round(b, 2),
                "linear_seconds": round(linear, 1),
            }
    rest = hi["wall_seconds"] - sum(st["seconds"] for st in hi["stages"].values())  # start-up, manifest
    peak, b_peak = fit(lo["peak_mb"], hi["peak_mb"])
    return {
        "scale": target,
        "extrapolated_from": [lo["scale"], hi["scale"]],
        "records": round(hi["records"] * ratio),
        "wall_seconds": round(sum(st["seconds"] for st in stages.values()) + rest, 1),
        "linear_wall_seconds": round(hi["wall_seconds"] * ratio, 1),
        "peak_mb": round(peak),
        "peak_exponent": round(b_peak, 2),
        "linear_peak_mb": round(hi["peak_mb"] * ratio),
        "stages": stages,
    }


def table(runs: list[dict[str, Any]], guess: dict[str, Any] | None) -> str:
    lines = [
        f"{'scale':>6} {'runner':<14} {'stage':<16} {'seconds':>9} {'records/s':>11} {'peak MB':>8}",
    ]
    for r in runs:
        label = r.get("runner", "in-process")
        for name, st in r["stages"].items():
            rate = f"{st['records_per_s']:,}" if st["records_per_s"] else "-"
            lines.append(
                f"{r['scale']:>6g} {label:<14} {name:<16} {st['seconds']:>9.2f} {rate:>11} {st['peak_mb']:>8,}"
            )
        lines.append(
            f"{r['scale']:>6g} {label:<14} {'whole build':<16} {r['wall_seconds']:>9.2f} "
            f"{r['records_per_s']:>11,} {r['peak_mb']:>8,}   ({r['records']:,} records)"
        )
    if guess is not None:
        lo, hi = guess["extrapolated_from"]
        lines.append(
            f"-- scale {guess['scale']:g}: EXTRAPOLATED, not run: a*scale^b through scales {lo:g} and {hi:g} "
            f"(and, in brackets, linear from scale {hi:g})"
        )
        for name, st in guess["stages"].items():
            lines.append(
                f"{guess['scale']:>6g} {'extrapolated':<14} {name:<16} {st['seconds']:>9.1f}   "
                f"(b={st['exponent']}; linear {st['linear_seconds']:.0f})"
            )
        lines.append(
            f"{guess['scale']:>6g} {'extrapolated':<14} {'whole build':<16} {guess['wall_seconds']:>9.1f} "
            f"{round(guess['records'] / max(guess['wall_seconds'], 1e-9)):>11,} {guess['peak_mb']:>8,}   "
            f"(linear: {guess['linear_wall_seconds']:.0f} s, {guess['linear_peak_mb']:,} MB)"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scales", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    ap.add_argument("--dask-scale", type=float, default=10.0, help="0: no Dask run")
    ap.add_argument("--dask-workers", type=int, default=2)
    ap.add_argument("--dask-memory-limit", default="1GiB")
    ap.add_argument("--extrapolate-to", type=float, default=1000.0)
    ap.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "bench_scale.json")
    ap.add_argument(
        "--from-json", type=Path, default=None, help="print the table of figures saved earlier; build nothing"
    )
    args = ap.parse_args()
    if args.from_json is not None:
        saved = json.loads(args.from_json.read_text())
        guess = extrapolate(saved["runs"], args.extrapolate_to)
        print(f"machine: {saved['machine']}")
        print(table(saved["runs"], guess))
        return
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB RAM, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f} at start"
    )
    print(f"machine: {machine}; profile crmarena, seed 0, offline writer")
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="orgseed-bench-scale-") as tmp:
        for scale in args.scales:
            run = build(scale, Path(tmp) / f"s{scale:g}", ["--no-prefect"])
            run["runner"] = "in-process"
            runs.append(run)
            print(f"  scale {scale:g}: {run['wall_seconds']:.1f} s, peak {run['peak_mb']:,} MB", flush=True)
        if args.dask_scale > 0:
            extra = [
                "--runner",
                "dask",
                "--shards",
                str(args.dask_workers),
                "--dask-memory-limit",
                args.dask_memory_limit,
            ]
            run = build(args.dask_scale, Path(tmp) / f"dask{args.dask_scale:g}", extra)
            run["runner"] = f"dask {args.dask_workers}x{args.dask_memory_limit}"
            same = [r for r in runs if r["scale"] == args.dask_scale]
            run["same_data_as_in_process"] = bool(same) and same[0]["data_sha256"] == run["data_sha256"]
            runs.append(run)
            print(f"  dask scale {args.dask_scale:g}: {run['wall_seconds']:.1f} s", flush=True)
    guess = extrapolate(runs, args.extrapolate_to)
    print(table(runs, guess))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps({"machine": machine, "runs": runs, "extrapolated": guess}, indent=2) + "\n",
        encoding="utf-8",
    )
    print(f"figures: {args.json}")


if __name__ == "__main__":
    main()
