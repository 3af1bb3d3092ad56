"""Scale: per build stage, time, records/s and peak memory, at scales 1, 10, 100 (and a Dask run).

    nice -n 10 .venv/bin/python benchmarks/bench_scale.py [--scales 1 10 100] [--dask-scale 10]
        [--prefect-scales 100] [--dask-workers 2] [--dask-memory-limit 1GiB] [--json benchmarks/results/bench_scale.json]
        [--keep DIR]   (keep the bundles, as DIR/s<scale>, instead of building them in a temporary folder)
        [--simulate-1000 [--shards-sample 3] [--sim-scales 10 30] [--sim-memory-limit 2GiB]
         [--baseline-json benchmarks/results/bench_scale.json]]

Each build is `orgseed build --scale S` in a child process (`--no-prefect`: in-process; `--prefect-scales`:
also with the default engine, a Prefect flow on threads, as `orgseed build` runs; the Dask run:
`--runner dask --shards W --dask-memory-limit M`, a local cluster of W memory-limited worker processes).
Every 0.1 s this script sums the resident set size (RSS) of the child and all its descendants (the Dask
scheduler, nannies and workers, the answer check's worker processes) with psutil; a stage's peak memory is
the largest sum sampled while it ran. The stages and their start times come from the bundle's manifest
(`/timings/stages`, written by flows/build.py): generate (synthesis, texts and CSV writing), store (with a
sidecar: the org's store, loaded there an object at a time while generation writes them; its seconds include
waiting for them), world, validate, tasks (building the instances), tasks.check (the independent re-derivation
from the CSVs), fidelity (the text fidelity figures), tasks.check_api (the store build when no sidecar built
it, the SOQL check in process, the HTTP sample; on Dask from its first part's start to its last part's end). Stages that run concurrently (the
sidecar, a cluster) overlap in time, and a stage's seconds may include waiting for a worker. records/s = all
rows of the 16 objects / the stage's seconds.

The scale-1,000 line is extrapolated, never measured: each stage's time and the peak memory are fitted as
a·scale^b through the two largest scales measured and evaluated at 1,000. It says what this code would need
on this machine, assuming nothing changes its growth beyond those scales.

`--simulate-1000`: a scale-1,000 build (18 M records) cannot run here, so its Dask run is simulated, and the
table says line by line what was measured and what was extrapolated:
- The plan: a `--runner dask --shards 256` build at scale 1,000 splits each object's blocks (and, for text
  objects, its text requests) into min(256, blocks) shards. An object's units at scale 1,000 (the rows or
  parents its blocks cover; its text requests) are exact where the scale-1,000 latent world decides them, and
  otherwise the largest simulated scale's times 1,000/scale where they grew between the simulated scales
  (the same where they did not): marked * in the table.
- Measured: at each `--sim-scales` scale the org is generated in this process once (its frames persisted to
  the work folder, as a Dask build persists them for its workers), then, object by object in generation
  order, `--shards-sample` shards as large as a scale-1,000 shard (the whole object when it is smaller) run
  on a fresh local cluster of `--dask-workers` workers with `--sim-memory-limit` each: per shard the seconds
  to read its inputs (the whole columns of the earlier objects' stored frames it asks for, generator/frames.py:
  once per worker and stage, as in a real run) and to compute it (with reading the row parts it needs), the
  worker's resident memory and the inputs it holds after the shard (the columns and parts read). The scale-1,000 run context (the latent
  world) is built once on a worker.
- Extrapolated: a shard's compute at scale 1,000 is the largest simulated scale's seconds per unit times a
  scale-1,000 shard's units (a shard computes its own rows; the table shows the seconds per unit at both
  scales, so a growth with the org's size shows), times the plan's shards over the workers; reading the
  inputs and the inputs' memory grow linearly with the org (from the largest simulated scale); a worker's
  memory at scale 1,000 is its resident memory at the largest simulated scale plus that growth (of the
  whole columns it holds) plus the parts of rows its stored frames may hold at most (the parts cache's bound,
  generator.frames.CACHED_PART_BYTES plus one part, per stored frame holding parts: "parts MB@1000") plus a
  larger shard's result. Not simulated, fitted as a*scale^b: the building process's part of generation
  (assembling each object, the near-duplicate search, CSV writing: this process's generation seconds minus
  its shards' seconds) through the simulated scales; and validate, tasks, tasks.check, tasks.check_api and
  the building process's peak memory through the two largest in-process scales (this invocation's, else
  `--baseline-json`), as the scale-1,000 line above is. The results' transfer from the workers to the
  building process is not measured.

Prints a table; writes every figure (with the machine and the commands) as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import os
import platform
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parent.parent
STAGES = ("generate", "store", "world", "validate", "tasks", "tasks.check", "fidelity", "tasks.check_api")


class TreeSampler:
    """RSS of a process and its descendants, sampled on a thread: (epoch seconds, bytes of the tree, bytes of
    the process itself) triples; the process's own share tells the building process's memory from that of its
    helpers (the sidecar, the answer check's workers, Dask's workers)."""

    def __init__(self, pid: int, every: float = 0.1) -> None:
        self.root = psutil.Process(pid)
        self.every = every
        self.samples: list[tuple[float, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            total = own = 0
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                break
            for p in procs:
                try:
                    rss = p.memory_info().rss
                except psutil.Error:
                    continue
                total += rss
                if p is self.root:
                    own = rss
            self.samples.append((time.time(), total, own))
            self._stop.wait(self.every)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, start: float | None = None, end: float | None = None, own: bool = False) -> int:
        """The largest sample of the tree (with `own`, of the process alone) taken between `start` and `end`;
        for a stage shorter than the sampling interval, the first sample after it started."""
        pick = (lambda s: s[2]) if own else (lambda s: s[1])
        inside = [
            pick(s) for s in self.samples if (start is None or s[0] >= start) and (end is None or s[0] <= end)
        ]
        if not inside and start is not None:
            inside = [pick(s) for s in self.samples if s[0] >= start][:1]
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
            "building_peak_mb": round(sampler.peak(start, start + seconds, own=True) / 2**20),
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
        "building_peak_mb": round(sampler.peak(own=True) / 2**20),
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


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def table(runs: list[dict[str, Any]], guess: dict[str, Any] | None) -> str:
    """The figures as text. "peak MB" is the whole process tree's; "building" the building process's alone
    (the rest: its sidecar, the answer check's workers, Dask's scheduler and workers)."""
    lines = [
        f"{'scale':>6} {'runner':<14} {'stage':<16} {'seconds':>9} {'records/s':>11} {'peak MB':>8} "
        f"{'building':>9}",
    ]
    for r in runs:
        label = r.get("runner", "in-process")
        for name, st in r["stages"].items():
            rate = f"{st['records_per_s']:,}" if st["records_per_s"] else "-"
            lines.append(
                f"{r['scale']:>6g} {label:<14} {name:<16} {st['seconds']:>9.2f} {rate:>11} {st['peak_mb']:>8,} "
                f"{_mb(st.get('building_peak_mb')):>9}"
            )
        lines.append(
            f"{r['scale']:>6g} {label:<14} {'whole build':<16} {r['wall_seconds']:>9.2f} "
            f"{r['records_per_s']:>11,} {r['peak_mb']:>8,} {_mb(r.get('building_peak_mb')):>9}   "
            f"({r['records']:,} records)"
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


# -- the simulated scale-1,000 run (--simulate-1000) ---------------------------------------------------------

SIM_TARGET = 1000.0
SIM_SHARDS = 256  # flows.build.MAX_SHARDS: the most shards a build splits an object into
PART_MB_1000 = (
    10.0  # the largest part of a stored frame's column at scale 1,000 (Case.Description, 16,384 rows)
)


class PlanningExecutor:
    """A generation executor for `generator.pipeline.generate` that records each object's plan (its blocks
    and the units they cover; for texts, its requests: `generate` is called with more shards than blocks, so
    it makes one job per block) and runs them as one job in this process, timing the jobs (the shards' part
    of generation)."""

    def __init__(self) -> None:
        from generator.pipeline import LocalExecutor

        self.inner = LocalExecutor()
        self.plans: dict[tuple[str, str], dict[str, int]] = {}
        self.seconds = 0.0

    async def run(self, rc: Any, jobs: Sequence[Any]) -> list[Any]:
        from generator.objects import GENERATORS

        if not jobs:
            return []
        first = jobs[0]
        if first.stage == "structured":
            gen = GENERATORS[first.sobject]
            units, size = gen.units(rc.build), gen.block_size
        else:
            units, size = len(jobs), 1
        self.plans[(first.sobject, first.stage)] = {"units": units, "blocks": len(jobs), "block_size": size}
        t = time.perf_counter()
        out: list[Any] = await self.inner.run(rc, [dataclasses.replace(first, shard=0, shards=1)])
        self.seconds += time.perf_counter() - t
        return out


def run_spec(scale: float) -> Any:
    from generator.pipeline import RunSpec
    from schemas.profile import load_profile

    return RunSpec(profile=str(load_profile("crmarena").path.resolve()), seed=0, scale=scale)


def generate_for_workers(scale: float, root: Path) -> dict[str, Any]:
    """Generate the org at `scale` in this process with its frames persisted in the work folder (as a Dask
    build persists them for its workers); the units of each object and the seconds of generation, of its
    shards' jobs, and of the rest (the building process's part)."""
    from generator.pipeline import RunContext, generate, make_context

    run = run_spec(scale)
    rc = RunContext(root, run, make_context(run))
    planner = PlanningExecutor()

    async def go() -> None:
        try:
            await generate(rc, planner, 10**9, lambda name, frame, fill: None, shares_memory=False)
        finally:
            await rc.aclose()

    before = psutil.Process().memory_info().rss
    sampler = TreeSampler(os.getpid(), every=0.05)
    t = time.perf_counter()
    try:
        asyncio.run(go())
    finally:
        sampler.stop()
    total = time.perf_counter() - t
    return {
        "run": run,
        "plans": planner.plans,
        "generate_seconds": total,
        "shard_seconds": planner.seconds,
        "building_process_seconds": total - planner.seconds,
        # this process's resident memory while generating as a Dask build's building process does (frames
        # persisted for the workers; here the shards run in it too)
        "rss_before_mb": before / 2**20,
        "rss_peak_mb": sampler.peak() / 2**20,
    }


def sample_shard(job: Any) -> dict[str, Any]:
    """One shard job on a worker, as `generator.pipeline.run_shard_sync` runs it, timed in parts: the run
    context (once per worker and run), reading the whole columns of stored frames it asks for (once per worker
    and stage: StoredFrame.whole_seconds), computing the shard (the rest, with reading the parts of its rows).
    With the worker's memory and the inputs it holds after the shard."""
    import pickle

    import pandas as pd

    from generator.frames import StoredFrame
    from generator.pipeline import run_structured_shard, run_text_shard, worker_context

    t0 = time.perf_counter()
    rc = worker_context(job.root, job.run)
    t1 = time.perf_counter()
    rc.load_frames(
        job.sobject, job.stage
    )  # opens the stored frames; their columns are read as the shard asks for them
    read_before = {id(f): f.whole_seconds for f in rc.build.frames.values() if isinstance(f, StoredFrame)}
    t2 = time.perf_counter()
    if job.stage == "structured":
        out: Any = run_structured_shard(job, rc)
    else:
        out = asyncio.run(run_text_shard(job, rc))
    t3 = time.perf_counter()
    stored = [f for f in rc.build.frames.values() if isinstance(f, StoredFrame)]
    # whole columns: read once per worker and stage (the load); the parts of the shard's rows count as its compute
    reading = sum(f.whole_seconds for f in stored) - sum(read_before.get(id(f), 0.0) for f in stored)
    # what the worker holds of the frames it read after the shard: whole columns (they grow with the org) and
    # the parts of rows (at most CACHED_PART_BYTES, plus one part, per stored frame, whatever the org's size)
    inputs = sum(
        f.whole_bytes() if isinstance(f, StoredFrame) else int(f.memory_usage(deep=True).sum())
        for f in rc.build.frames.values()
        if isinstance(f, StoredFrame | pd.DataFrame)
    )
    parts = sum(f.part_bytes() for f in stored)
    part_frames = sum(1 for f in stored if f.part_bytes())
    return {
        "context_s": t1 - t0,
        "load_s": t2 - t1 + reading,
        "run_s": t3 - t2 - reading,
        "rss": psutil.Process().memory_info().rss,
        "max_rss": high_water_mark(),
        "inputs": inputs,
        "parts": parts,
        "part_frames": part_frames,
        "result_bytes": len(pickle.dumps(out)),
    }


def high_water_mark() -> int:
    """This process's peak resident memory (bytes): VmHWM, the high-water mark of its own address space (not
    `ru_maxrss`, which a spawned worker inherits from the process that forked it before its exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def context_on_worker(run: Any) -> dict[str, float]:
    """The run context (profile, model, latent world) of `run` built on a worker: seconds and memory."""
    from generator.pipeline import make_context

    before = psutil.Process().memory_info().rss
    t = time.perf_counter()
    make_context(run)
    return {"seconds": time.perf_counter() - t, "rss_delta": psutil.Process().memory_info().rss - before}


def spread(n: int, k: int) -> list[int]:
    """k shard indices of n, evenly spread (first, last and between), without repeats."""
    if k >= n:
        return list(range(n))
    return sorted({round(i * (n - 1) / max(1, k - 1)) for i in range(k)})


def exact_units_1000() -> dict[str, int]:
    """The units (generator/objects `units`) at scale 1,000 of the objects whose units the latent world
    decides (the others' depend on earlier objects' frames, which only a scale-1,000 generation makes)."""
    from generator.objects import GENERATORS
    from generator.pipeline import make_context

    ctx = make_context(run_spec(SIM_TARGET))
    out = {}
    for name, gen in GENERATORS.items():
        try:
            out[name] = int(gen.units(ctx))
        except KeyError:  # reads an earlier object's frame
            continue
    return out


def plan_1000(
    plans: dict[float, dict[tuple[str, str], dict[str, int]]], exact: dict[str, int]
) -> dict[tuple[str, str], dict[str, Any]]:
    """Each object's plan at scale 1,000: its units (exact where the world decides them, else the largest
    simulated scale's times 1,000/scale where they grow with scale, the same where they do not), blocks,
    shards (min(SIM_SHARDS, blocks)) and the units and blocks of one shard."""
    scales = sorted(plans)
    lo, hi = plans[scales[0]], plans[scales[-1]]
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for key, p in hi.items():
        grows = lo.get(key, p)["units"] != p["units"]
        if key[1] == "structured" and key[0] in exact:
            units, how = exact[key[0]], "exact"
        elif grows:
            units, how = math.ceil(p["units"] * SIM_TARGET / scales[-1]), f"x{SIM_TARGET / scales[-1]:g}"
        else:
            units, how = p["units"], "constant"
        blocks = max(1, math.ceil(units / p["block_size"]))
        shards = min(SIM_SHARDS, blocks)
        out[key] = {
            "units": units,
            "units_from": how,
            "blocks": blocks,
            "shards": shards,
            "units_per_shard": units / shards,
            "blocks_per_shard": blocks / shards,
        }
    return out


def shard_units(plan: dict[str, int], shard: int, shards: int) -> int:
    """The units shard `shard` of `shards` covers (its blocks' units; the last block may be short)."""
    from generator.pipeline import shard_slice

    blocks = shard_slice(plan["blocks"], shard, shards)
    size = plan["block_size"]
    return max(0, min(plan["units"], blocks.stop * size) - blocks.start * size)


def run_samples(
    scale: float,
    gen: dict[str, Any],
    plan: dict[tuple[str, str], dict[str, Any]],
    sample: int,
    workers: int,
    limit: str,
) -> dict[str, Any]:
    """On a fresh local cluster, `sample` shards of each object (in generation order, one object after the
    other, as a build runs them) of the size a scale-1,000 shard has."""
    import distributed

    from generator.pipeline import ShardJob

    t = time.perf_counter()
    cluster = distributed.LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, memory_limit=limit
    )
    with cluster, distributed.Client(cluster) as client:
        start_seconds = time.perf_counter() - t
        idle = max(client.run(lambda: psutil.Process().memory_info().rss).values())
        context_1000 = None
        if scale == max(gen["scales"]):
            context_1000 = client.submit(context_on_worker, run_spec(SIM_TARGET), pure=False).result()
        objects: dict[str, Any] = {}
        for (name, stage), mine in gen["plans"].items():
            # this scale's shards of the blocks a scale-1,000 shard holds (one, when the object has fewer)
            shards = max(1, round(mine["blocks"] / plan[(name, stage)]["blocks_per_shard"]))
            picked = spread(shards, sample)
            jobs = [ShardJob(str(gen["root"]), gen["run"], name, stage, i, shards) for i in picked]
            t_obj = time.perf_counter()
            got = client.gather([client.submit(sample_shard, j, pure=False) for j in jobs])
            units = [shard_units(mine, i, shards) for i in picked]
            objects[f"{name}.{stage}"] = {
                "units": mine["units"],
                "shards_of_this_size": shards,
                "sampled_units": units,
                "wall_seconds": time.perf_counter() - t_obj,
                "shard_seconds": [g["run_s"] for g in got],
                "seconds_per_unit": sum(g["run_s"] for g in got) / max(1, sum(units)),
                "load_seconds": max(g["load_s"] for g in got),
                "context_seconds": max(g["context_s"] for g in got),
                "rss_mb": max(g["rss"] for g in got) / 2**20,
                "max_rss_mb": max(g["max_rss"] for g in got) / 2**20,
                "inputs_mb": max((g["inputs"] or 0) for g in got) / 2**20,
                "parts_mb": max(g["parts"] for g in got) / 2**20,
                "part_frames": max(g["part_frames"] for g in got),
                "result_mb_per_unit": sum(g["result_bytes"] for g in got) / max(1, sum(units)) / 2**20,
            }
    return {
        "scale": scale,
        "cluster_start_seconds": start_seconds,
        "idle_worker_mb": idle / 2**20,
        "context_1000": context_1000,
        "objects": objects,
    }


def _power(x1: float, y1: float, x2: float, y2: float, x: float, lo: float, hi: float) -> tuple[float, float]:
    """y at x on a*x^b through (x1, y1) and (x2, y2), b clamped to [lo, hi]; (y, b)."""
    if y1 <= 0 or y2 <= 0 or x1 == x2:
        b = lo
    else:
        b = min(hi, max(lo, math.log(y2 / y1) / math.log(x2 / x1)))
    return y2 * (x / x2) ** b, b


def simulate_1000(
    sim_scales: list[float],
    sample: int,
    workers: int,
    limit: str,
    base_runs: list[dict[str, Any]],
    base_from: str,
) -> dict[str, Any]:
    """The simulated scale-1,000 Dask run (module docstring): measured sample shards, then the estimate."""
    from dask.utils import parse_bytes

    from generator.frames import CACHED_PART_BYTES

    scales = sorted(sim_scales)
    gens: dict[float, dict[str, Any]] = {}
    samples: dict[float, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="orgseed-sim-1000-") as tmp:
        for scale in scales:
            root = Path(tmp) / f"s{scale:g}"
            root.mkdir()
            gens[scale] = {**generate_for_workers(scale, root), "root": root, "scales": scales}
            print(
                f"  simulated: scale {scale:g} generated in this process in {gens[scale]['generate_seconds']:.1f} s",
                flush=True,
            )
        plan = plan_1000({sc: g["plans"] for sc, g in gens.items()}, exact_units_1000())
        for scale in scales:
            samples[scale] = run_samples(scale, gens[scale], plan, sample, workers, limit)
            print(f"  simulated: scale {scale:g} sample shards measured", flush=True)
    lo, hi = scales[0], scales[-1]
    objects = {}
    shard_total = 0.0
    for key, p in plan.items():
        label = f"{key[0]}.{key[1]}"
        a, b = samples[lo]["objects"][label], samples[hi]["objects"][label]
        # a shard's compute per unit (block unit, text request) as measured at the largest simulated scale: a
        # shard computes its own rows (the ratio to the smaller scale shows whether the org's size changed it)
        per_unit = b["seconds_per_unit"]
        ratio = b["seconds_per_unit"] / a["seconds_per_unit"] if a["seconds_per_unit"] > 0 else None
        per_shard = per_unit * p["units_per_shard"]
        load = b["load_seconds"] * SIM_TARGET / hi  # the inputs grow with the org
        # whole columns grow with the org; the parts of rows held are bounded by the stored frames' parts cache:
        # counted at its bound (CACHED_PART_BYTES plus one part per stored frame holding parts)
        inputs = b["inputs_mb"] * SIM_TARGET / hi
        parts_bound = b["part_frames"] * (CACHED_PART_BYTES + PART_MB_1000 * 2**20) / 2**20
        parts = max(b["parts_mb"], parts_bound)
        # the worker at scale hi, plus the inputs' growth to 1,000, plus a larger shard's result
        sampled = sum(b["sampled_units"]) / max(1, len(b["sampled_units"]))
        rss = (
            b["rss_mb"]
            + (inputs - b["inputs_mb"])
            + (parts - b["parts_mb"])
            + max(0.0, p["units_per_shard"] - sampled) * b["result_mb_per_unit"]
        )
        seconds = load + per_shard * math.ceil(p["shards"] / workers)
        shard_total += seconds
        objects[label] = {
            "units_1000": p["units"],
            "units_1000_from": p["units_from"],
            "shards_1000": p["shards"],
            "units_per_shard_1000": round(p["units_per_shard"], 1),
            "measured_shard_seconds": {
                f"{lo:g}": [round(x, 4) for x in a["shard_seconds"]],
                f"{hi:g}": [round(x, 4) for x in b["shard_seconds"]],
            },
            "measured_ms_per_unit": {
                f"{lo:g}": round(a["seconds_per_unit"] * 1e3, 4),
                f"{hi:g}": round(b["seconds_per_unit"] * 1e3, 4),
            },
            "shard_seconds_1000": round(per_shard, 4),
            "ms_per_unit_ratio": None if ratio is None else round(ratio, 2),
            "measured_load_seconds": {
                f"{lo:g}": round(a["load_seconds"], 3),
                f"{hi:g}": round(b["load_seconds"], 3),
            },
            "load_seconds_1000": round(load, 2),
            "seconds_1000": round(seconds, 1),
            "measured_worker_rss_mb": {f"{lo:g}": round(a["rss_mb"]), f"{hi:g}": round(b["rss_mb"])},
            "measured_inputs_mb": {f"{lo:g}": round(a["inputs_mb"], 1), f"{hi:g}": round(b["inputs_mb"], 1)},
            "inputs_mb_1000": round(inputs),
            "measured_parts_mb": {f"{lo:g}": round(a["parts_mb"], 1), f"{hi:g}": round(b["parts_mb"], 1)},
            "parts_mb_1000": round(parts),
            "worker_rss_mb_1000": round(rss),
        }
    flow, flow_b = _power(
        lo,
        gens[lo]["building_process_seconds"],
        hi,
        gens[hi]["building_process_seconds"],
        SIM_TARGET,
        0.0,
        3.0,
    )
    growth = {sc: g["rss_peak_mb"] - g["rss_before_mb"] for sc, g in gens.items()}
    gen_peak, gen_peak_b = _power(lo, growth[lo], hi, growth[hi], SIM_TARGET, 0.0, 3.0)
    guess = extrapolate(base_runs, SIM_TARGET)
    later = {n: st["seconds"] for n, st in (guess or {}).get("stages", {}).items() if n not in ("generate",)}
    context = samples[hi]["context_1000"] or {"seconds": 0.0, "rss_delta": 0}
    start = samples[hi]["cluster_start_seconds"]
    whole = start + context["seconds"] + shard_total + flow + sum(later.values())
    worker_peak = max(o["worker_rss_mb_1000"] for o in objects.values())
    limit_mb = parse_bytes(limit) / 2**20
    return {
        "scale": SIM_TARGET,
        "sim_scales": scales,
        "workers": workers,
        "memory_limit": limit,
        "shards": SIM_SHARDS,
        "sample_per_object": sample,
        "measured": {
            "cluster_start_seconds": round(start, 2),
            "context_1000_seconds": round(context["seconds"], 2),
            "context_1000_mb": round(context["rss_delta"] / 2**20),
            "idle_worker_mb": round(samples[hi]["idle_worker_mb"]),
            "worker_peak_mb": {
                f"{sc:g}": round(max(o["max_rss_mb"] for o in samples[sc]["objects"].values()))
                for sc in scales
            },
            "generate_in_this_process": {
                f"{sc:g}": {
                    k: round(g[k], 2)
                    for k in (
                        "generate_seconds",
                        "shard_seconds",
                        "building_process_seconds",
                        "rss_before_mb",
                        "rss_peak_mb",
                    )
                }
                for sc, g in gens.items()
            },
            "samples": {f"{sc:g}": samples[sc]["objects"] for sc in scales},
        },
        "objects": objects,
        "extrapolated": {
            "shards_seconds": round(shard_total, 1),
            "building_process_generate_seconds": round(flow, 1),
            "building_process_generate_exponent": round(flow_b, 2),
            "later_stages_seconds": later,
            "later_stages_from": base_from,
            "building_process_peak_mb": (guess or {}).get("peak_mb"),
            "building_process_generate_growth_mb": round(gen_peak),
            "building_process_generate_growth_exponent": round(gen_peak_b, 2),
            "worker_peak_mb": worker_peak,
            "worker_limit_mb": round(limit_mb),
            "fits_worker_limit": worker_peak <= limit_mb,
            "wall_seconds": round(whole, 1),
            "records": (guess or {}).get("records"),
        },
    }


def sim_table(sim: dict[str, Any]) -> str:
    lo, hi = sim["sim_scales"][0], sim["sim_scales"][-1]
    m, e = sim["measured"], sim["extrapolated"]
    lines = [
        f"-- scale {sim['scale']:g}: SIMULATED Dask run, {sim['workers']} workers x {sim['memory_limit']}, "
        f"--shards {sim['shards']}: {sim['sample_per_object']} shards per object of the scale-{sim['scale']:g} "
        f"shard's size MEASURED on the cluster at scales {lo:g} and {hi:g}; everything at scale {sim['scale']:g} "
        "EXTRAPOLATED from them (see the docstring)",
        f"{'':>6} {'object.stage':<30} {'units@1000':>11} {'shards':>6} {'ms/unit ' + format(lo, 'g'):>11} "
        f"{'ms/unit ' + format(hi, 'g'):>11} {'s/shard@1000':>12} {'load s@1000':>11} {'seconds@1000':>12} "
        f"{'worker MB ' + format(lo, 'g') + '/' + format(hi, 'g'):>16} {'inputs MB@1000':>14} {'parts MB@1000':>13} "
        f"{'MB@1000':>8}",
    ]
    for label, o in sim["objects"].items():
        mu, rss = o["measured_ms_per_unit"], o["measured_worker_rss_mb"]
        lines.append(
            f"{'':>6} {label:<30} {format(o['units_1000'], ',') + ('' if o['units_1000_from'] == 'exact' else '*'):>11} {o['shards_1000']:>6} {mu[f'{lo:g}']:>11.4f} "
            f"{mu[f'{hi:g}']:>11.4f} {o['shard_seconds_1000']:>12.3f} {o['load_seconds_1000']:>11.2f} "
            f"{o['seconds_1000']:>12.1f} {str(rss[f'{lo:g}']) + '/' + str(rss[f'{hi:g}']):>16} "
            f"{o['inputs_mb_1000']:>14,} {o.get('parts_mb_1000', 0):>13,} {o['worker_rss_mb_1000']:>8,}"
        )
    later = ", ".join(f"{n} {s:.0f} s" for n, s in e["later_stages_seconds"].items())
    lines += [
        f"{'':>6} (units at 1000: * planned from scale {hi:g}, x{sim['scale'] / hi:g} where they grew from scale "
        f"{lo:g}, else the same; the rest exact from the scale-1000 world. ms/unit: measured compute per block unit "
        f"or text request; s/shard@1000: the scale-{hi:g} ms/unit times the 1000-shard's units)",
        f"  1000 measured       cluster start {m['cluster_start_seconds']:.1f} s; the scale-1000 run context on a "
        f"worker {m['context_1000_seconds']:.2f} s, +{m['context_1000_mb']} MB; idle worker {m['idle_worker_mb']} MB; "
        f"worker peak (VmHWM) at scales {', '.join(f'{k}: {v} MB' for k, v in m['worker_peak_mb'].items())}",
        f"  1000 extrapolated   generation shards on the cluster {e['shards_seconds']:.0f} s (the rows above); "
        f"the building process's part of generation {e['building_process_generate_seconds']:.0f} s "
        f"(b={e['building_process_generate_exponent']})",
        f"  1000 extrapolated   later stages ({e['later_stages_from']}): {later or 'none: no in-process runs'}",
        f"  1000 extrapolated   whole build {e['wall_seconds']:.0f} s; worker peak {e['worker_peak_mb']:,} MB "
        f"({'within' if e['fits_worker_limit'] else 'OVER'} the {e['worker_limit_mb']:,} MB limit); building "
        f"process peak {e['building_process_peak_mb'] or '-'} MB",
        "  1000 measured       generation as the Dask path's building process runs it (frames persisted for "
        "the workers; the shards in the same process): memory growth "
        + ", ".join(
            f"scale {k}: {v['rss_peak_mb'] - v['rss_before_mb']:,.0f} MB"
            for k, v in m["generate_in_this_process"].items()
        ),
        f"  1000 extrapolated   that growth at scale 1000: {e.get('building_process_generate_growth_mb', 0):,} MB "
        f"(a*scale^b, b={e.get('building_process_generate_growth_exponent', '-')})",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scales", type=float, nargs="*", default=[1.0, 10.0, 100.0])
    ap.add_argument(
        "--prefect-scales",
        type=float,
        nargs="*",
        default=[],
        help="scales also built with the default engine (a Prefect flow on threads), as `orgseed build` runs",
    )
    ap.add_argument("--dask-scale", type=float, default=10.0, help="0: no Dask run")
    ap.add_argument("--dask-workers", type=int, default=2)
    ap.add_argument("--dask-memory-limit", default="1GiB")
    ap.add_argument("--extrapolate-to", type=float, default=1000.0)
    ap.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "bench_scale.json")
    ap.add_argument(
        "--from-json", type=Path, default=None, help="print the table of figures saved earlier; build nothing"
    )
    ap.add_argument(
        "--simulate-1000", action="store_true", help="a simulated scale-1,000 Dask run (docstring)"
    )
    ap.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="write the bundles under this folder and keep them (default: a temporary folder, removed)",
    )
    ap.add_argument("--shards-sample", type=int, default=3, help="shards measured per object and scale")
    ap.add_argument("--sim-scales", type=float, nargs=2, default=[10.0, 30.0])
    ap.add_argument("--sim-memory-limit", default="2GiB")
    ap.add_argument(
        "--baseline-json",
        type=Path,
        default=REPO / "benchmarks" / "results" / "bench_scale.json",
        help="in-process runs saved earlier, for the later stages of the simulation when this run has fewer than two",
    )
    args = ap.parse_args()
    if args.from_json is not None:
        saved = json.loads(args.from_json.read_text())
        guess = extrapolate(saved["runs"], args.extrapolate_to)
        print(f"machine: {saved['machine']}")
        print(table(saved["runs"], guess))
        if saved.get("simulated_1000"):
            print(sim_table(saved["simulated_1000"]))
        return
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB RAM, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f} at start"
    )
    print(f"machine: {machine}; profile crmarena, seed 0, offline writer")
    runs: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        if args.keep is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="orgseed-bench-scale-"))
        else:
            args.keep.mkdir(parents=True, exist_ok=True)
            tmp = str(args.keep)
        for scale in args.scales:
            run = build(scale, Path(tmp) / f"s{scale:g}", ["--no-prefect"])
            run["runner"] = "in-process"
            runs.append(run)
            print(f"  scale {scale:g}: {run['wall_seconds']:.1f} s, peak {run['peak_mb']:,} MB", flush=True)
        for scale in args.prefect_scales:
            # the default engine, as `orgseed build` runs it: a Prefect flow on threads, with Prefect's
            # temporary API server (a process of the tree, sampled with it)
            run = build(scale, Path(tmp) / f"prefect{scale:g}", [])
            run["runner"] = "prefect"
            same = [r for r in runs if r["scale"] == scale and r["runner"] == "in-process"]
            run["same_data_as_in_process"] = bool(same) and same[0]["data_sha256"] == run["data_sha256"]
            runs.append(run)
            print(
                f"  prefect scale {scale:g}: {run['wall_seconds']:.1f} s, peak {run['peak_mb']:,} MB",
                flush=True,
            )
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
    sim = None
    if args.simulate_1000:
        base_runs, base_from = runs, "fitted through this run's two largest in-process scales"
        if extrapolate(runs, SIM_TARGET) is None and args.baseline_json.exists():
            saved = json.loads(args.baseline_json.read_text())
            base_runs = saved["runs"]
            base_from = f"fitted through the two largest in-process scales of {args.baseline_json.name} ({saved['machine']})"
        sim = simulate_1000(
            args.sim_scales,
            args.shards_sample,
            args.dask_workers,
            args.sim_memory_limit,
            base_runs,
            base_from,
        )
    guess = extrapolate(runs, args.extrapolate_to)
    print(table(runs, guess))
    if sim is not None:
        print(sim_table(sim))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps({"machine": machine, "runs": runs, "extrapolated": guess, "simulated_1000": sim}, indent=2)
        + "\n",
        encoding="utf-8",
    )
    print(f"figures: {args.json}")


if __name__ == "__main__":
    main()
