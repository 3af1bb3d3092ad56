"""Generation and validation alone: per stage, time, records/s and peak memory, at the scales given.

    nice -n 5 .venv/bin/python benchmarks/bench_generate_validate.py [--scales 3 30 100] [--pythonpath DIR]

Each build is `orgseed build --scale S --no-prefect --per-task 0` (no task stages) in a child process,
sampled by benchmarks/bench_scale.py's `build` (RSS of the child and its descendants every 0.1 s; a stage's
peak is the largest sample while it ran). `--pythonpath DIR` runs another checkout's code (e.g. an exported
base commit) with this checkout's environment, for before/after figures under the same conditions. The load
average before and after each build is printed beside its figures: on a shared machine the seconds are
only comparable between runs made under similar load.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import build


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", type=float, nargs="+", default=[3.0, 30.0])
    ap.add_argument("--pythonpath", default=None, help="import orgseed's packages from this folder first")
    args = ap.parse_args()
    if args.pythonpath:
        os.environ["PYTHONPATH"] = args.pythonpath
    print(f"{'scale':>6} {'stage':<10} {'seconds':>9} {'records/s':>11} {'peak MB':>8}   load average")
    with tempfile.TemporaryDirectory(prefix="orgseed-bench-genval-") as tmp:
        for scale in args.scales:
            before = os.getloadavg()[0]
            run = build(scale, Path(tmp) / f"s{scale:g}", ["--no-prefect", "--per-task", "0"])
            load = f"{before:.2f} -> {os.getloadavg()[0]:.2f}"
            for name in ("generate", "validate"):
                st = run["stages"][name]
                print(
                    f"{scale:>6g} {name:<10} {st['seconds']:>9.2f} {st['records_per_s']:>11,} "
                    f"{st['peak_mb']:>8,}   {load}"
                )
            print(
                f"{scale:>6g} {'build':<10} {run['wall_seconds']:>9.2f} {run['records_per_s']:>11,} "
                f"{run['peak_mb']:>8,}   ({run['records']:,} records, data {run['data_sha256'][:16]})",
                flush=True,
            )


if __name__ == "__main__":
    main()
