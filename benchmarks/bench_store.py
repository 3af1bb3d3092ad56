"""CPU seconds of building a bundle's `org.sqlite` (`Store.open(..., rebuild=True)`), the store build that
every `orgseed build` runs for its check through the org.

    .venv/bin/python benchmarks/bench_store.py BUNDLE [--repeat N]

The store is written to a copy-free temporary path beside the bundle's own (the bundle's org.sqlite is
replaced: run it on a bundle you own). Prints CPU seconds (user+sys of this process, which is where SQLite
runs) and the load average beside each figure, since wall time is meaningless on a shared machine.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from orgs.local.store import Store


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    for _ in range(args.repeat):
        c0, t0 = cpu(), time.perf_counter()
        store = Store.open(args.bundle, rebuild=True)
        c1, t1 = cpu(), time.perf_counter()
        size = store.path.stat().st_size
        store.close()
        load = Path("/proc/loadavg").read_text().split()[:3]
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"store build: {c1 - c0:.2f} CPU-s, {t1 - t0:.2f} s wall, {size / 1e6:.1f} MB, "
            f"peak RSS {peak:.0f} MB, load {' '.join(load)}"
        )


if __name__ == "__main__":
    main()
