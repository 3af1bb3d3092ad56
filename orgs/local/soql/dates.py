"""Relative date literals (`TODAY`, `LAST_N_DAYS:30`, `THIS_QUARTER`, ...) as half-open day ranges.

Salesforce evaluates them in the user's time zone and locale; the local org evaluates them in UTC with
weeks starting on Sunday (the en_US locale) and a fiscal year that starts in January (so the FISCAL
variants equal the calendar ones). "Today" is a parameter, so answers are reproducible.

Range semantics (from the SOQL reference): `field = LITERAL` means start <= field < end, `field < LITERAL`
means field < start, `field > LITERAL` means field >= end, `<=` means field < end, `>=` means field >= start.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

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


_FIRST = date.min.toordinal()
_LAST = date.max.toordinal()


def add_days(d: date, days: int) -> date:
    """`d` moved by `days`, stopping at 0001-01-01 and 9999-12-31 (LAST_N_DAYS:99999999 reaches the first
    day there is, not an error)."""
    return date.fromordinal(min(_LAST, max(_FIRST, d.toordinal() + days)))


def add_months(d: date, months: int) -> date:
    """The first-of-month `d` moved by `months` (d must be the 1st), stopping at the first and last months
    there are."""
    index = d.year * 12 + (d.month - 1) + months
    index = min(date.max.year * 12 + 11, max(date.min.year * 12, index))
    return date(index // 12, index % 12 + 1, 1)


def week_start(d: date) -> date:
    """The Sunday on or before `d`."""
    return add_days(d, -((d.weekday() + 1) % 7))


def resolve(name: str, n: int | None, today: date) -> DayRange:
    """The range of the date literal `name` (upper case, FISCAL treated as calendar) relative to today.

    Ranges reaching past the calendar's ends stop there (the answers stay right: no record is dated
    outside 0001-9999)."""
    name = name.replace("_FISCAL", "")
    t = today
    ws = week_start(t)
    ms = date(t.year, t.month, 1)
    qs = date(t.year, (t.month - 1) // 3 * 3 + 1, 1)
    ys = date(t.year, 1, 1)
    k = n or 0
    days, months = add_days, add_months
    table: dict[str, tuple[date, date]] = {
        "YESTERDAY": (days(t, -1), t),
        "TODAY": (t, days(t, 1)),
        "TOMORROW": (days(t, 1), days(t, 2)),
        "LAST_WEEK": (days(ws, -7), ws),
        "THIS_WEEK": (ws, days(ws, 7)),
        "NEXT_WEEK": (days(ws, 7), days(ws, 14)),
        "LAST_MONTH": (months(ms, -1), ms),
        "THIS_MONTH": (ms, months(ms, 1)),
        "NEXT_MONTH": (months(ms, 1), months(ms, 2)),
        "LAST_90_DAYS": (days(t, -90), days(t, 1)),
        "NEXT_90_DAYS": (days(t, 1), days(t, 91)),
        "THIS_QUARTER": (qs, months(qs, 3)),
        "LAST_QUARTER": (months(qs, -3), qs),
        "NEXT_QUARTER": (months(qs, 3), months(qs, 6)),
        "THIS_YEAR": (ys, months(ys, 12)),
        "LAST_YEAR": (months(ys, -12), ys),
        "NEXT_YEAR": (months(ys, 12), months(ys, 24)),
        "LAST_N_DAYS": (days(t, -k), days(t, 1)),
        "NEXT_N_DAYS": (days(t, 1), days(t, k + 1)),
        "N_DAYS_AGO": (days(t, -k), days(t, -k + 1)),
        "LAST_N_WEEKS": (days(ws, -7 * k), ws),
        "NEXT_N_WEEKS": (days(ws, 7), days(ws, 7 * (k + 1))),
        "N_WEEKS_AGO": (days(ws, -7 * k), days(ws, -7 * (k - 1))),
        "LAST_N_MONTHS": (months(ms, -k), ms),
        "NEXT_N_MONTHS": (months(ms, 1), months(ms, k + 1)),
        "N_MONTHS_AGO": (months(ms, -k), months(ms, -k + 1)),
        "LAST_N_QUARTERS": (months(qs, -3 * k), qs),
        "NEXT_N_QUARTERS": (months(qs, 3), months(qs, 3 * (k + 1))),
        "N_QUARTERS_AGO": (months(qs, -3 * k), months(qs, -3 * k + 3)),
        "LAST_N_YEARS": (months(ys, -12 * k), ys),
        "NEXT_N_YEARS": (months(ys, 12), months(ys, 12 * (k + 1))),
        "N_YEARS_AGO": (months(ys, -12 * k), months(ys, -12 * k + 12)),
    }
    start, end = table[name]
    return DayRange(start, end)
