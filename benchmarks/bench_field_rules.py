"""What a field filled by a rule (`x-sf.generate`) costs per record, per rule kind.

Each rule fills one synthetic field of `--rows` records (a Case-sized object at scale 100 has ~1.5 M) through
`generator.objects.fields.rule_column`, the function the pipeline calls; the fastest of `--repeat` runs is
reported as records per second and seconds per million records. Faker calls a Python provider per record and is
timed on `--faker-rows` records (the figure is per million all the same).

    .venv/bin/python benchmarks/bench_field_rules.py [--rows 1000000] [--faker-rows 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import platform
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from generator.ids import make_ids
from generator.objects.fields import rule_column
from generator.pipeline import RunSpec, make_context
from schemas.model import FieldSpec
from schemas.rules import parse_rule

PROFILE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "profiles" / "small.toml"

TEXT = FieldSpec("Text__c", "string", "T", "T", True, length=80, json_schema={"maxLength": 80})
PICK = FieldSpec("Tier__c", "picklist", "T", "T", True, picklist=("Gold", "Silver", "Bronze"))
NUMBER = FieldSpec("Score__c", "double", "S", "S", True, scale=2, json_schema={"type": ["number", "null"]})
WHEN = FieldSpec("When__c", "datetime", "W", "W", True)
PARENT = FieldSpec("Parent__c", "reference", "P", "P", True, reference_to=("Widget__c",))
COPY = FieldSpec("Copy__c", "string", "C", "C", True, length=80, json_schema={"maxLength": 80})

RULES: list[tuple[str, FieldSpec, dict[str, Any]]] = [
    ("constant", TEXT, {"constant": "Consumer"}),
    (
        "choice (weights) + nullShare",
        PICK,
        {"choice": {"Gold": 1, "Silver": 3, "Bronze": 6}, "nullShare": 0.2},
    ),
    ("sequence", TEXT, {"sequence": {"prefix": "L-", "digits": 8}}),
    ("range (double)", NUMBER, {"range": {"min": 0, "max": 100}}),
    ("range (datetime, span)", WHEN, {"range": {}}),
    ("reference (random, self)", PARENT, {"reference": "random"}),
    ("copy (same record)", COPY, {"copy": "Subject"}),
    ("faker (company)", TEXT, {"faker": "company"}),
]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--faker-rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ctx = make_context(RunSpec(profile=str(PROFILE), seed=0, scale=1.0))
    print(f"python {platform.python_version()} · {platform.machine()} · best of {args.repeat}")
    print(f"{'rule':<32}{'records':>12}{'records/s':>14}{'s per million':>16}")
    for label, spec, raw in RULES:
        f = replace(spec, rule=parse_rule(spec, raw, Path("Widget__c.json")))
        n = args.faker_rows if label.startswith("faker") else args.rows
        frame = pd.DataFrame({"Id": make_ids("a00", 0, n), "Subject": [f"Widget {i}" for i in range(n)]})
        sobject = "Case" if label.startswith("copy") else "Widget__c"  # a copy path is resolved in the model
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            rule_column(ctx, sobject, f, frame)
            best = min(best, time.perf_counter() - t)
        print(f"{label:<32}{n:>12,}{n / best:>14,.0f}{best * 1_000_000 / n:>16.2f}")


if __name__ == "__main__":
    main()
