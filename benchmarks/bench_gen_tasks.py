"""CPU seconds of the building process's two generator stages, measured apart from the rest of a build.

    .venv/bin/python benchmarks/bench_gen_tasks.py tasks BUNDLE [--seed 0] [--per-task 130]
    .venv/bin/python benchmarks/bench_gen_tasks.py generate OUT [--scale 10] [--seed 0]

`tasks` rebuilds the task files of an existing bundle (generator.tasks.build_tasks, offline writer, as a
build does with the profile's default --per-task) into a copy of its tasks/ folder and prints the process's
CPU seconds (user+sys) around it and the SHA-256 of each task file. `generate` runs generation and the
writing of the data files (generator.pipeline.generate with the bundle writer, no Prefect) into OUT and
prints the CPU seconds and the data hash. The load average is printed beside each figure: wall-clock time
is meaningless on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def run_tasks(root: Path, seed: int, per_task: int) -> None:
    from generator.pipeline import RunSpec
    from generator.tasks import build_tasks
    from generator.text.writers import make_writer
    from orgs.bundle import Bundle
    from schemas.model import load_model
    from schemas.profile import load_profile

    model = load_model()
    manifest = Bundle(root).read_manifest()
    run = RunSpec(str(manifest["profile"]["path"]), seed, float(manifest["scale"]))
    writer = make_writer(run, load_profile(run.profile, model))
    t0 = cpu()
    asyncio.run(build_tasks(root, seed, per_task, writer, "scalar", model, adapt=True))
    spent = cpu() - t0
    print(f"tasks: {spent:.2f} CPU-s (load {loadavg()})")
    for f in sorted((root / "tasks").iterdir()):
        print(hashlib.sha256(f.read_bytes()).hexdigest(), f.name)


def run_generate(out: Path, scale: float, seed: int) -> None:
    import flows.build
    from flows.build import BuildOptions, build_bundle
    from generator.pipeline import LocalExecutor

    inner = flows.build.generate
    spent: list[float] = []

    async def timed(*args: object, **kwargs: object) -> object:
        t0 = cpu()
        try:
            return await inner(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            spent.append(cpu() - t0)

    flows.build.generate = timed  # type: ignore[assignment]
    opts = BuildOptions(scale=scale, seed=seed, out=str(out), engine="local", per_task=0, force=True)
    report = asyncio.run(build_bundle(opts, LocalExecutor()))
    print(f"generate (with writing the data files): {sum(spent):.2f} CPU-s (load {loadavg()})")
    print("data_sha256", report.manifest.get("data_sha256"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["tasks", "generate"])
    ap.add_argument("path", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=float, default=10.0)
    ap.add_argument("--per-task", type=int, default=130)
    args = ap.parse_args()
    if args.what == "tasks":
        run_tasks(args.path, args.seed, args.per_task)
    else:
        run_generate(args.path, args.scale, args.seed)


if __name__ == "__main__":
    main()
