"""Salesforce value formats shared by the generator, the validators and the orgs.

Datetimes are UTC and written `YYYY-MM-DDTHH:MM:SS.000+0000`; dates `YYYY-MM-DD`; booleans `true`/`false`;
empty means null. Frames keep datetimes as numpy `datetime64[s]` (naive, UTC) and dates as `datetime64[D]`.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

import numpy as np
import pandas as pd

SF_DATETIME_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})\+0000$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
ID_RE = re.compile(r"^[0-9A-Za-z]{15}(?:[A-Z0-5]{3})?$")
EMAIL_RE = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}$"
)
_SUFFIX_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"


def format_datetime(value: datetime) -> str:
    """One datetime (naive = UTC) in Salesforce's wire format."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.000+0000")


def parse_datetime(text: str) -> datetime:
    """Parse `YYYY-MM-DDTHH:MM:SS.000+0000` into a naive UTC datetime; ValueError otherwise."""
    m = SF_DATETIME_RE.fullmatch(text)
    if not m:
        raise ValueError(f"`{text}` is not a datetime of the form YYYY-MM-DDTHH:MM:SS.000+0000")
    y, mo, d, h, mi, s, ms = (int(g) for g in m.groups())
    return datetime(y, mo, d, h, mi, s, ms * 1000)


def is_sf_datetime(text: object) -> bool:
    if not isinstance(text, str):
        return False
    try:
        parse_datetime(text)
    except ValueError:
        return False
    return True


def is_date(text: object) -> bool:
    if not isinstance(text, str) or not DATE_RE.fullmatch(text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def is_email(text: object) -> bool:
    """A plain `local@domain.tld` address (no display name, no spaces)."""
    return isinstance(text, str) and len(text) <= 254 and EMAIL_RE.fullmatch(text) is not None


def sf_id_suffix(id15: str) -> str:
    """The 3-character case-safe suffix Salesforce appends to a 15-character id.

    Each 5-character chunk gives one suffix character: bit i is set when character i is an upper-case
    letter, and the 5-bit number indexes `A..Z0..5`.
    """
    out = ""
    for start in (0, 5, 10):
        bits = sum(1 << i for i, ch in enumerate(id15[start : start + 5]) if "A" <= ch <= "Z")
        out += _SUFFIX_CHARS[bits]
    return out


def is_sf_id(text: object) -> bool:
    """An 18-character Salesforce id: 15 base-62 characters and the right case-safe suffix."""
    if not isinstance(text, str) or len(text) != 18 or not ID_RE.fullmatch(text):
        return False
    return sf_id_suffix(text[:15]) == text[15:]


def datetime_column(values: pd.Series) -> pd.Series:
    """Format a datetime64 column; NaT becomes None."""
    s = pd.Series(values)
    if s.dtype.kind != "M":
        s = pd.to_datetime(s)
    out = s.dt.strftime("%Y-%m-%dT%H:%M:%S.000+0000")
    return out.astype(object).where(s.notna(), None)


def date_column(values: pd.Series) -> pd.Series:
    s = pd.Series(values)
    if s.dtype.kind != "M":
        s = pd.to_datetime(s)
    out = s.dt.strftime("%Y-%m-%d")
    return out.astype(object).where(s.notna(), None)


def bool_column(values: pd.Series) -> pd.Series:
    s = pd.Series(values)
    return s.map({True: "true", False: "false", np.True_: "true", np.False_: "false"}).astype(object)


def money_column(values: pd.Series) -> pd.Series:
    s = pd.Series(values, dtype="float64")
    out = s.map(lambda v: f"{v:.2f}")
    return out.astype(object).where(s.notna(), None)


def number_column(values: pd.Series) -> pd.Series:
    s = pd.Series(values)
    if s.dtype.kind in "iu":
        return s.astype(str).astype(object)
    f = s.astype("float64")
    out = f.map(lambda v: str(int(v)) if float(v).is_integer() else repr(float(v)))
    return out.astype(object).where(f.notna(), None)
