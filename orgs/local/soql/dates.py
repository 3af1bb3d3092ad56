"""Relative date literals (`TODAY`, `LAST_N_DAYS:30`, `THIS_QUARTER`, ...) as half-open day ranges.

Salesforce evaluates them in the user's time zone and locale; the local org evaluates them in UTC with
weeks starting on Sunday (the en_US locale) and a fiscal year that starts in January (so the FISCAL
variants equal the calendar ones). "Today" is a parameter, so answers are reproducible.

Range semantics (from the SOQL reference): `field = LITERAL` means start <= field < end, `field < LITERAL`
means field < start, `field > LITERAL` means field >= end, `<=` means field < end, `>=` means field >= start.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

PLAIN = frozenset(
    {
        "YESTERDAY",
        "TODAY",
        "TOMORROW",
        "LAST_WEEK",
        "THIS_WEEK",
        "NEXT_WEEK",
        "LAST_MONTH",
        "THIS_MONTH",
        "NEXT_MONTH",
        "LAST_90_DAYS",
        "NEXT_90_DAYS",
        "THIS_QUARTER",
        "LAST_QUARTER",
        "NEXT_QUARTER",
        "THIS_YEAR",
        "LAST_YEAR",
        "NEXT_YEAR",
        "THIS_FISCAL_QUARTER",
        "LAST_FISCAL_QUARTER",
        "NEXT_FISCAL_QUARTER",
        "THIS_FISCAL_YEAR",
        "LAST_FISCAL_YEAR",
        "NEXT_FISCAL_YEAR",
    }
)
WITH_N = frozenset(
    {
        "LAST_N_DAYS",
        "NEXT_N_DAYS",
        "N_DAYS_AGO",
        "LAST_N_WEEKS",
        "NEXT_N_WEEKS",
        "N_WEEKS_AGO",
        "LAST_N_MONTHS",
        "NEXT_N_MONTHS",
        "N_MONTHS_AGO",
        "LAST_N_QUARTERS",
        "NEXT_N_QUARTERS",
        "N_QUARTERS_AGO",
        "LAST_N_YEARS",
        "NEXT_N_YEARS",
        "N_YEARS_AGO",
        "LAST_N_FISCAL_QUARTERS",
        "NEXT_N_FISCAL_QUARTERS",
        "N_FISCAL_QUARTERS_AGO",
        "LAST_N_FISCAL_YEARS",
        "NEXT_N_FISCAL_YEARS",
        "N_FISCAL_YEARS_AGO",
    }
)
ALL = PLAIN | WITH_N


@dataclass(frozen=True)
class DayRange:
    """Days start (inclusive) to end (exclusive)."""

    start: date
    end: date


def add_months(d: date, months: int) -> date:
    """The first-of-month `d` moved by `months` (d must be the 1st)."""
    index = d.year * 12 + (d.month - 1) + months
    return date(index // 12, index % 12 + 1, 1)


def week_start(d: date) -> date:
    """The Sunday on or before `d`."""
    return d - timedelta(days=(d.weekday() + 1) % 7)


def resolve(name: str, n: int | None, today: date) -> DayRange:
    """The range of the date literal `name` (upper case, FISCAL treated as calendar) relative to today."""
    name = name.replace("_FISCAL", "")
    t = today
    day = timedelta(days=1)
    ws = week_start(t)
    ms = date(t.year, t.month, 1)
    qs = date(t.year, (t.month - 1) // 3 * 3 + 1, 1)
    ys = date(t.year, 1, 1)
    k = n or 0
    table: dict[str, tuple[date, date]] = {
        "YESTERDAY": (t - day, t),
        "TODAY": (t, t + day),
        "TOMORROW": (t + day, t + 2 * day),
        "LAST_WEEK": (ws - 7 * day, ws),
        "THIS_WEEK": (ws, ws + 7 * day),
        "NEXT_WEEK": (ws + 7 * day, ws + 14 * day),
        "LAST_MONTH": (add_months(ms, -1), ms),
        "THIS_MONTH": (ms, add_months(ms, 1)),
        "NEXT_MONTH": (add_months(ms, 1), add_months(ms, 2)),
        "LAST_90_DAYS": (t - 90 * day, t + day),
        "NEXT_90_DAYS": (t + day, t + 91 * day),
        "THIS_QUARTER": (qs, add_months(qs, 3)),
        "LAST_QUARTER": (add_months(qs, -3), qs),
        "NEXT_QUARTER": (add_months(qs, 3), add_months(qs, 6)),
        "THIS_YEAR": (ys, add_months(ys, 12)),
        "LAST_YEAR": (add_months(ys, -12), ys),
        "NEXT_YEAR": (add_months(ys, 12), add_months(ys, 24)),
        "LAST_N_DAYS": (t - k * day, t + day),
        "NEXT_N_DAYS": (t + day, t + (k + 1) * day),
        "N_DAYS_AGO": (t - k * day, t - (k - 1) * day),
        "LAST_N_WEEKS": (ws - 7 * k * day, ws),
        "NEXT_N_WEEKS": (ws + 7 * day, ws + 7 * (k + 1) * day),
        "N_WEEKS_AGO": (ws - 7 * k * day, ws - 7 * (k - 1) * day),
        "LAST_N_MONTHS": (add_months(ms, -k), ms),
        "NEXT_N_MONTHS": (add_months(ms, 1), add_months(ms, k + 1)),
        "N_MONTHS_AGO": (add_months(ms, -k), add_months(ms, -k + 1)),
        "LAST_N_QUARTERS": (add_months(qs, -3 * k), qs),
        "NEXT_N_QUARTERS": (add_months(qs, 3), add_months(qs, 3 * (k + 1))),
        "N_QUARTERS_AGO": (add_months(qs, -3 * k), add_months(qs, -3 * k + 3)),
        "LAST_N_YEARS": (add_months(ys, -12 * k), ys),
        "NEXT_N_YEARS": (add_months(ys, 12), add_months(ys, 12 * (k + 1))),
        "N_YEARS_AGO": (add_months(ys, -12 * k), add_months(ys, -12 * k + 12)),
    }
    start, end = table[name]
    return DayRange(start, end)
