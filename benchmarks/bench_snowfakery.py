"""orgseed's whole verified build side by side with Snowfakery generating a recipe of the same shape.

    nice -n 10 .venv/bin/python benchmarks/bench_snowfakery.py [--scales 1 10] [--snowfakery PATH]
        [--json benchmarks/results/bench_snowfakery.json]

For each scale S, one after the other on the same machine:
1. `orgseed build --scale S --no-prefect` (generation, CSV writing, validation, the 9 x 130 task instances and
   both answer checks), timed end to end in a child process;
2. a Snowfakery recipe of the same shape, written from orgseed's org model and that build's manifest: the same
   16 objects in the model's load order (`schemas.graph.load_plan`), every field of each object (a fake of the
   field's type: words, paragraphs, numbers, dates, picklist values), each lookup a `random_reference` to its
   parent object, and exactly the build's record count per object (`count:`). Cycles are broken as the load
   plan breaks them: a deferred lookup is left empty. Snowfakery writes CSV (`--output-format csv`), timed
   end to end in a child process.

Snowfakery generates without validating or building tasks, so the comparison flatters it. It is not a
dependency of orgseed (its pins clash with ours): pass `--snowfakery` the path of a `snowfakery` executable,
or let this script make a virtual environment for it under `benchmarks/.snowfakery-venv` (`pip install
snowfakery "setuptools<81"`, needs PyPI). Prints a table; writes the figures, the machine and the commands as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from schemas.graph import load_plan  # noqa: E402
from schemas.model import FieldSpec, OrgModel, load_model  # noqa: E402

SNOWFAKERY_VENV = REPO / "benchmarks" / ".snowfakery-venv"


def fake_for(field: FieldSpec) -> Any:
    """A Snowfakery value of the field's type (the value's shape, not orgseed's distributions)."""
    t = field.type
    if t == "picklist" and field.picklist:
        return {"random_choice": list(field.picklist)[:20]}
    if t == "textarea":
        return {"fake": "Paragraph"}
    if t == "email":
        return {"fake": "Email"}
    if t == "phone":
        return {"fake": "PhoneNumber"}
    if t == "url":
        return {"fake": "Url"}
    if t == "boolean":
        return {"random_choice": [True, False]}
    if t in ("int", "double", "currency", "percent"):
        return {"random_number": {"min": 0, "max": 1000}}
    if t == "date":
        return {"date_between": {"start_date": "2019-06-01", "end_date": "2024-05-31"}}
    if t == "datetime":
        return {"datetime_between": {"start_date": "2019-06-01", "end_date": "2024-05-31"}}
    if "name" in field.name.lower():
        return {"fake": "Name"}
    return {"fake": "Sentence"}


def recipe(model: OrgModel, counts: dict[str, int]) -> list[dict[str, Any]]:
    """The recipe: one top-level object template per sObject, in load order, with the build's counts."""
    plan = load_plan(model)
    deferred = {(d.sobject, d.field) for d in plan.deferred}
    out = []
    for name in plan.order:
        spec = model.get(name)
        fields: dict[str, Any] = {}
        for f in spec.fields:
            if f.name == "Id" or f.computed:
                continue
            if f.is_lookup:
                targets = [t for t in f.reference_to if t in model.objects]
                if targets and (name, f.name) not in deferred:
                    fields[f.name] = {"random_reference": targets[0]}
                continue
            fields[f.name] = fake_for(f)
        out.append({"object": name, "count": int(counts.get(name, 0)), "fields": fields})
    return out


def write_recipe(model: OrgModel, counts: dict[str, int], path: Path) -> None:
    # JSON is YAML: no YAML writer needed here
    path.write_text(json.dumps(recipe(model, counts), indent=1))


def snowfakery_executable(given: str | None) -> str:
    if given:
        return given
    exe = SNOWFAKERY_VENV / "bin" / "snowfakery"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(SNOWFAKERY_VENV)], check=True)
        subprocess.run(
            # Snowfakery 4.2 imports pkg_resources, which setuptools 81 dropped
            [str(SNOWFAKERY_VENV / "bin" / "pip"), "install", "--quiet", "snowfakery", "setuptools<81"],
            check=True,
        )
    return str(exe)


def timed(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    seconds = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def csv_rows(folder: Path) -> int:
    """Data rows in the CSV files under `folder` (records may span lines: count with the csv reader)."""
    import csv

    csv.field_size_limit(2**31 - 1)
    rows = 0
    for path in folder.rglob("*.csv"):
        with path.open(newline="") as fh:
            rows += sum(1 for _ in csv.reader(fh)) - 1
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scales", type=float, nargs="+", default=[1.0, 10.0])
    ap.add_argument("--snowfakery", help="a snowfakery executable (default: make one in benchmarks/)")
    ap.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "bench_snowfakery.json")
    args = ap.parse_args()
    exe = snowfakery_executable(args.snowfakery)
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    model = load_model()
    orgseed = str(Path(sys.executable).parent / "orgseed")
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-snowfakery-") as tmp:
        for scale in args.scales:
            out = Path(tmp) / f"orgseed-{scale:g}"
            build_cmd = [orgseed, "build", "--scale", f"{scale:g}", "--no-prefect", "--out", str(out)]
            build_seconds, _ = timed(build_cmd)
            manifest = json.loads((out / "manifest.json").read_text())
            counts = manifest["counts"]
            records = sum(counts.values())
            rec = Path(tmp) / f"recipe-{scale:g}.yml"
            write_recipe(model, counts, rec)
            sf_out = Path(tmp) / f"snowfakery-{scale:g}"
            sf_out.mkdir()
            sf_cmd = [exe, str(rec), "--output-format", "csv", "--output-folder", str(sf_out)]
            sf_seconds, _ = timed(sf_cmd)
            sf_rows = csv_rows(sf_out)
            runs.append(
                {
                    "scale": scale,
                    "records": records,
                    "orgseed_seconds": round(build_seconds, 2),
                    "orgseed_records_per_s": round(records / build_seconds),
                    "snowfakery_rows": sf_rows,
                    "snowfakery_seconds": round(sf_seconds, 2),
                    "snowfakery_rows_per_s": round(sf_rows / sf_seconds),
                    "speedup": round(sf_seconds / build_seconds, 2),
                    "orgseed_command": " ".join(build_cmd[1:]),
                    "snowfakery_command": "snowfakery <recipe> --output-format csv --output-folder <dir>",
                }
            )
            print(
                f"scale {scale:g}: orgseed {records:,} records in {build_seconds:.1f} s "
                f"({records / build_seconds:,.0f}/s, validated, tasks checked); Snowfakery {sf_rows:,} rows "
                f"in {sf_seconds:.1f} s ({sf_rows / sf_seconds:,.0f}/s); orgseed {sf_seconds / build_seconds:.2f}x",
                flush=True,
            )
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average_at_end": os.getloadavg(),
        },
        "snowfakery": version,
        "runs": runs,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
