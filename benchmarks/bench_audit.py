"""`orgseed audit` time and peak memory at scale 1 and 10 (issue 13: under 30 s at scale 1, 3 minutes at 10).

Builds the crmarena profile at each scale (or reuses a bundle passed with --bundle), then times
`run_audit` + `write_audit` in a fresh process and reports its peak resident memory (ru_maxrss).

    .venv/bin/python benchmarks/bench_audit.py [--scales 1 10] [--bundle PATH ...]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHILD = """
import json, resource, sys, time
from validators.audit import run_audit, write_audit
t = time.perf_counter()
report = run_audit(sys.argv[1])
audit_s = time.perf_counter() - t
write_audit(sys.argv[1], report)
total_s = time.perf_counter() - t
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"audit_s": audit_s, "total_s": total_s, "peak_mb": peak_mb, "verdict": report["verdict"]}))
"""


def build(scale: float, out: Path) -> Path:
    if (out / "manifest.json").exists():
        manifest = json.loads((out / "manifest.json").read_text())
        if manifest.get("status") == "complete" and float(manifest.get("scale", 0)) == scale:
            return out
    subprocess.run(
        [
            sys.executable,
            "-m",
            "flows.cli",
            "build",
            "--scale",
            str(scale),
            "--no-prefect",
            "--out",
            str(out),
            "--force",
        ],
        cwd=REPO,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return out


def measure(bundle: Path) -> dict[str, float]:
    res = subprocess.run(
        [sys.executable, "-c", CHILD, str(bundle)], cwd=REPO, check=True, capture_output=True, text=True
    )
    out: dict[str, float] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scales", type=float, nargs="*", default=[1.0, 10.0])
    parser.add_argument("--bundle", type=Path, nargs="*", default=[])
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {platform.machine()}, {time.strftime('%Y-%m-%d')}")
    bundles = list(args.bundle) or [
        build(s, REPO / "output" / "bench" / f"audit_s{s:g}") for s in args.scales
    ]
    print(f"{'bundle':48} {'records':>9} {'audit s':>8} {'+ page s':>9} {'peak MB':>8}  verdict")
    for b in bundles:
        counts = json.loads((b / "manifest.json").read_text()).get("counts", {})
        m = measure(b)
        print(
            f"{str(b)[-48:]:48} {sum(counts.values()):>9,} {m['audit_s']:>8.1f} {m['total_s'] - m['audit_s']:>9.1f} "
            f"{m['peak_mb']:>8.0f}  {m['verdict']}"
        )


if __name__ == "__main__":
    main()
