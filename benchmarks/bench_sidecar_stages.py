"""The sidecar's three stages on an existing bundle, as the build's sidecar runs them one after the other in one
process (flows/sidecar.py): `validate` (validators/run.py `validate_bundle`), `tasks.check` (validators/tasks.py
`check_tasks_report`) and `fidelity` (validators/fidelity_report.py `fidelity_figures`). CPU seconds of each.

    nice -n 5 .venv/bin/python benchmarks/bench_sidecar_stages.py BUNDLE [--repeat 3] [--stages validate ...]
        [--python OTHER/.venv/bin/python]   # another checkout's code, for a before/after on the same bundle
        [--dump FILE]                       # the stages' results (minus timings), to compare two checkouts

Each round is a fresh process (the stages import their modules first, off the clock, as the sidecar warms
up); the figure per stage is the smallest of `--repeat` rounds (CPU seconds: user + system of the process;
on a shared machine wall time mostly measures the other processes), printed with the load average and the
process's peak RSS (ru_maxrss). The bundle is only read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STAGES = ("validate", "tasks.check", "fidelity")

CHILD = r"""
import dataclasses, json, resource, sys, time
from pathlib import Path
import validators.fidelity_report, validators.run, validators.tasks  # noqa: F401  (the sidecar's warm-up)
from validators.fidelity_report import fidelity_figures
from validators.run import validate_bundle
from validators.tasks import check_tasks_report

root, stages, dump = Path(sys.argv[1]), sys.argv[2].split(","), sys.argv[3]
cpu, results = {}, {}
for name in stages:
    t = time.process_time()
    if name == "validate":
        report = validate_bundle(root).to_json()
        report.pop("timings", None)
        results[name] = report
    elif name == "tasks.check":
        checked = check_tasks_report(root)
        results[name] = {"instances": checked.instances,
                         "disagreements": [dataclasses.asdict(d) for d in checked.disagreements]}
    else:
        results[name] = fidelity_figures(root)
    cpu[name] = time.process_time() - t
if dump:
    Path(dump).write_text(json.dumps(results, indent=1, sort_keys=True, default=str))
print(json.dumps({"cpu": cpu, "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stages", nargs="+", default=list(STAGES), choices=STAGES)
    parser.add_argument(
        "--python", default=sys.executable, help="the interpreter (and so the checkout) to run"
    )
    parser.add_argument("--dump", type=Path, help="write the stages' results here (from the first round)")
    args = parser.parse_args()
    cwd = Path(args.python).absolute().parent.parent.parent if args.python != sys.executable else REPO
    best: dict[str, float] = {}
    peak = 0.0
    for i in range(args.repeat):
        dump = str(args.dump) if args.dump and i == 0 else ""
        cmd = [args.python, "-c", CHILD, str(args.bundle), ",".join(args.stages), dump]
        res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"the stages failed:\n{res.stderr[-3000:]}")
        got = json.loads(res.stdout.strip().splitlines()[-1])
        print(f"round {i + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in got["cpu"].items())
              + f" CPU-s; peak RSS {got['maxrss_mb']:.0f} MB; load {load()}")  # fmt: skip
        for k, v in got["cpu"].items():
            best[k] = min(best.get(k, v), v)
        peak = max(peak, got["maxrss_mb"])
    total = sum(best.values())
    print(f"{args.bundle} ({cwd}): best of {args.repeat}: "
          + ", ".join(f"{k} {v:.2f}" for k, v in best.items()) + f"; the three {total:.2f} CPU-s; "
          f"peak RSS {peak:.0f} MB; load {load()}")  # fmt: skip


if __name__ == "__main__":
    main()
