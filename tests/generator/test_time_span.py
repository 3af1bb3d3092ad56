"""The time span (issue 16 item 5): the data covers every date a task instance asks about.

CRMArena's instances ask about 2020-01 onwards (its earliest "today" dates: HTU 2020-01-04, BRI 2020-01-04,
NED 2020-01-06; /work/shared/reference/crmarena.md, task table) over a four-year org ending May 2024. The
default profile now spans five whole years, 2019-06-01 to 2024-05-31 (it started 2020-06-01, so every instance
dated before mid-2020 was None, which an agent could guess; whole years keep every calendar month equally
often, which the habits -> monthly orders signal needs), and no instance asks about a day before the data. The windows are recomputed
with the validators' own window code (validators/task_solver.py), not the builders'.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pandas as pd

from schemas.profile import load_profile
from validators.task_solver import parse_param_datetime, period_delta, window


def _earliest(params: dict) -> date | None:
    if "period_name" in params or "end_date" in params:
        start, _ = window(params)
        return start.date()
    if "interval_count" in params and "today_date" in params:  # NED: the purchase date asked about
        today = parse_param_datetime(params["today_date"], "today_date")
        return (today - period_delta(params["period"], int(params["interval_count"]))).date()
    return None


def test_the_default_profile_covers_crmarenas_dates() -> None:
    span = load_profile("crmarena").span
    assert span.start <= date(2020, 1, 1) and span.end >= date(2024, 5, 31)


def test_no_instance_asks_about_a_day_before_the_data(default_bundle: Path) -> None:
    truth = (default_bundle / "tasks" / "ground_truth.jsonl").read_text()
    rows = [json.loads(x) for x in truth.splitlines()]
    first = pd.read_csv(default_bundle / "data" / "Case.csv", usecols=["CreatedDate"])["CreatedDate"].min()[
        :10
    ]
    data_start = date.fromisoformat(
        json.loads((default_bundle / "manifest.json").read_text())["profile"]["start"]
    )
    assert data_start <= date(2020, 1, 1) and first >= data_start.isoformat()
    dated = [(r["idx"], _earliest(r["params"])) for r in rows]
    early = [(idx, d) for idx, d in dated if d is not None and d < data_start]
    assert early == []
    # The span is used: instances ask about the first half of 2020 (the issue: all of those were None before).
    first_half = [r for r, (_, d) in zip(rows, dated, strict=True) if d is not None and d < date(2020, 7, 1)]
    assert first_half and any(r["answer"] is not None for r in first_half)
