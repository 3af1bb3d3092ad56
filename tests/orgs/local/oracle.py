"""An independent pandas oracle for the local org's golden corpus.

It reads the bundle's CSVs with pandas (never org.sqlite, never orgs.local) and evaluates a structured
description of each query: conditions, parent paths, ordering, grouping, child lists, search terms. The
golden files carry both the SOQL/SOSL text (sent through simple-salesforce) and this description (for
the oracle), so the two answers come from two independent derivations.

Semantics the oracle encodes (as documented for SOQL): case-insensitive string comparison; a null field
never equals a value, and negations are two-valued (`!=`, NOT IN, NOT include nulls); ORDER BY puts nulls
first ascending and last descending; records without ORDER BY come in CSV order; date literals are
ranges relative to "today" (the day after the profile's time span) in UTC, weeks start on Sunday.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from schemas.model import ObjectSpec, OrgModel

Cond = Any

# what a Salesforce org computes for the fields the local org adds to the model (orgs/local/computed.py):
# a person's Name is "FirstName LastName" (LastName alone without a FirstName); IsClosed is Status = Closed
ORG_COMPUTED: dict[str, Callable[[pd.DataFrame], list[Any]]] = {
    "Name": lambda df: [
        last if first is None else f"{first} {last}"
        for first, last in zip(df["FirstName"], df["LastName"], strict=True)
    ],
    "IsClosed": lambda df: [status == "Closed" for status in df["Status"]],
}
# the system fields a served bundle derives (README, "System fields"), computed by `system_fields` below
SYSTEM_FIELDS = (
    "CreatedById",
    "CreatedDate",
    "LastModifiedById",
    "LastModifiedDate",
    "SystemModstamp",
    "IsDeleted",
    "CaseNumber",
    "OrderNumber",
)


def _wire(value: str) -> str:
    return value + "T00:00:00.000+0000" if len(value) == 10 else value


def system_fields(root: Path, spec: ObjectSpec, df: pd.DataFrame) -> dict[str, list[Any]]:
    """The README's rule, written out: dates are the record's own date/date-time columns; created is the
    stored CreatedDate, else the earliest date, else the span start; modified is the latest of them; the
    creator is the owner, else the first user; numbers count up in created order, ties by Id."""
    go_live = json.loads((root / "manifest.json").read_text(encoding="utf-8"))["profile"]["start"]
    users = pd.read_csv(root / "data" / "User.csv", dtype=str, keep_default_na=False)
    api_user = users["Id"].iloc[0]
    date_cols = [f.name for f in spec.fields if f.type in ("date", "datetime") and f.name in df.columns]
    created, modified = [], []
    for _, row in df.iterrows():
        dates = sorted(_wire(row[c]) for c in date_cols if row[c])
        stored = row["CreatedDate"] if "CreatedDate" in df.columns and row["CreatedDate"] else None
        c = _wire(stored) if stored else (dates[0] if dates else _wire(go_live))
        created.append(c)
        modified.append(max([c, *dates]))
    owner = df["OwnerId"].tolist() if "OwnerId" in df.columns else [None] * len(df)
    creator = [o or api_user for o in owner]
    rank = sorted(range(len(df)), key=lambda i: (created[i], df["Id"].iloc[i]))
    number = [""] * len(df)
    for n, i in enumerate(rank, start=1):
        number[i] = f"{n:08d}"
    return {
        "CreatedById": creator,
        "CreatedDate": created,
        "LastModifiedById": creator,
        "LastModifiedDate": modified,
        "SystemModstamp": modified,
        "IsDeleted": [False] * len(df),
        "CaseNumber": number,
        "OrderNumber": number,
    }


# -- data -----------------------------------------------------------------------------------------------------


class Frames:
    """The bundle's CSVs, typed by the org model: numbers float, booleans bool, dates/datetimes as text."""

    def __init__(self, root: Path, model: OrgModel) -> None:
        self.root = root
        self.model = model
        self._frames: dict[str, pd.DataFrame] = {}
        self._index: dict[str, dict[str, int]] = {}
        self._paths: dict[tuple[str, str], list[Any]] = {}

    def frame(self, sobject: str) -> pd.DataFrame:
        name = self.model.get(sobject).name
        if name not in self._frames:
            df = pd.read_csv(self.root / "data" / f"{name}.csv", dtype=str, keep_default_na=False)
            df = df.astype(object).where(df != "", None)
            system = None
            for f in self.model.get(name).fields:
                if f.computed and f.name in SYSTEM_FIELDS:
                    if system is None:
                        system = system_fields(self.root, self.model.get(name), df)
                    df[f.name] = system[f.name]
                elif f.computed:  # a field the org computes: derived here, by this oracle's own rule
                    df[f.name] = ORG_COMPUTED[f.name](df)
                elif f.type == "boolean":
                    df[f.name] = df[f.name].map(lambda v: None if v is None else v == "true")
                elif f.type in ("int", "double", "currency"):
                    df[f.name] = df[f.name].map(lambda v: None if v is None else float(v))
            self._frames[name] = df.reset_index(drop=True)
            self._index[name] = {str(v).lower(): i for i, v in enumerate(df["Id"])}
        return self._frames[name]

    def spec(self, sobject: str) -> ObjectSpec:
        return self.model.get(sobject)

    def value(self, sobject: str, field: str, row: int) -> Any:
        return self.frame(sobject)[self.spec(sobject).field(field).name].iloc[row]

    def resolve(self, sobject: str, path: str) -> list[Any]:
        """The values of `path` (e.g. `Order.Account.ShippingState`) for every row of `sobject`."""
        key = (sobject.lower(), path.lower())
        if key not in self._paths:
            self._paths[key] = self._resolve(sobject, path)
        return self._paths[key]

    def _resolve(self, sobject: str, path: str) -> list[Any]:
        spec = self.spec(sobject)
        parts = path.split(".")
        rows: list[int | None] = list(range(len(self.frame(spec.name))))
        for part in parts[:-1]:
            lookup = next(f for f in spec.lookups if (f.relationship_name or "").lower() == part.lower())
            target = self.spec(lookup.reference_to[0])
            fk = self.frame(spec.name)[lookup.name].tolist()
            self.frame(target.name)
            index = self._index[target.name]
            rows = [None if r is None or fk[r] is None else index.get(str(fk[r]).lower()) for r in rows]
            spec = target
        col = self.frame(spec.name)[spec.field(parts[-1]).name].tolist()
        return [None if r is None else col[r] for r in rows]

    def parent_exists(self, sobject: str, path: str) -> list[bool]:
        """For `Account.Name`: does the record have an Account (for null-parent shaping)?"""
        rel_path = ".".join(path.split(".")[:-1])
        if not rel_path:
            return [True] * len(self.frame(sobject))
        return [v is not None for v in self.resolve(sobject, rel_path + ".Id")]


# -- dates --------------------------------------------------------------------------------------------------------


def _months(d: date, k: int) -> date:
    y, m = divmod(d.year * 12 + d.month - 1 + k, 12)
    if y < 1:  # ranges stop at the calendar's ends (0001-01-01 .. 9999-12-31)
        return date.min
    if y > 9999:
        return date.max
    return date(y, m + 1, 1)


def _shift(d: date, td: timedelta) -> date:
    """`d + td`, or the calendar's first or last day when that falls outside it."""
    try:
        return d + td
    except OverflowError:
        return date.min if td.days < 0 else date.max


def _year(y: int) -> date:
    return date.min if y < 1 else date.max if y > 9999 else date(y, 1, 1)


def date_range(name: str, n: int | None, today: date) -> tuple[date, date]:
    """[start, end) of a SOQL date literal, written independently of the engine."""
    n = n or 0
    name = name.replace("_FISCAL", "")
    sunday = today - timedelta(days=(today.weekday() + 1) % 7)
    month = today.replace(day=1)
    quarter = date(today.year, 3 * ((today.month - 1) // 3) + 1, 1)
    year = date(today.year, 1, 1)
    one = timedelta(days=1)
    if name == "TODAY":
        return today, _shift(today, one)
    if name == "YESTERDAY":
        return _shift(today, -one), today
    if name == "TOMORROW":
        return _shift(today, one), _shift(today, 2 * one)
    if name.endswith("_WEEK") and "_N_" not in name:
        k = {"LAST_WEEK": -1, "THIS_WEEK": 0, "NEXT_WEEK": 1}[name]
        return _shift(sunday, timedelta(weeks=k)), _shift(sunday, timedelta(weeks=k + 1))
    if name in ("LAST_MONTH", "THIS_MONTH", "NEXT_MONTH"):
        k = {"LAST_MONTH": -1, "THIS_MONTH": 0, "NEXT_MONTH": 1}[name]
        return _months(month, k), _months(month, k + 1)
    if name in ("LAST_QUARTER", "THIS_QUARTER", "NEXT_QUARTER"):
        k = {"LAST_QUARTER": -1, "THIS_QUARTER": 0, "NEXT_QUARTER": 1}[name]
        return _months(quarter, 3 * k), _months(quarter, 3 * k + 3)
    if name in ("LAST_YEAR", "THIS_YEAR", "NEXT_YEAR"):
        k = {"LAST_YEAR": -1, "THIS_YEAR": 0, "NEXT_YEAR": 1}[name]
        return _year(today.year + k), _year(today.year + k + 1)
    if name == "LAST_90_DAYS":
        return _shift(today, -timedelta(days=90)), _shift(today, one)
    if name == "NEXT_90_DAYS":
        return _shift(today, one), _shift(today, timedelta(days=91))
    if name == "LAST_N_DAYS":
        return _shift(today, -timedelta(days=n)), _shift(today, one)
    if name == "NEXT_N_DAYS":
        return _shift(today, one), _shift(today, timedelta(days=n + 1))
    if name == "N_DAYS_AGO":
        return _shift(today, -timedelta(days=n)), _shift(today, -timedelta(days=n - 1))
    if name == "LAST_N_WEEKS":
        return _shift(sunday, -timedelta(weeks=n)), sunday
    if name == "NEXT_N_WEEKS":
        return _shift(sunday, timedelta(weeks=1)), _shift(sunday, timedelta(weeks=n + 1))
    if name == "N_WEEKS_AGO":
        return _shift(sunday, -timedelta(weeks=n)), _shift(sunday, -timedelta(weeks=n - 1))
    if name == "LAST_N_MONTHS":
        return _months(month, -n), month
    if name == "NEXT_N_MONTHS":
        return _months(month, 1), _months(month, n + 1)
    if name == "N_MONTHS_AGO":
        return _months(month, -n), _months(month, -n + 1)
    if name == "LAST_N_QUARTERS":
        return _months(quarter, -3 * n), quarter
    if name == "NEXT_N_QUARTERS":
        return _months(quarter, 3), _months(quarter, 3 * n + 3)
    if name == "N_QUARTERS_AGO":
        return _months(quarter, -3 * n), _months(quarter, -3 * n + 3)
    if name == "LAST_N_YEARS":
        return _year(year.year - n), year
    if name == "NEXT_N_YEARS":
        return _year(year.year + 1), _year(year.year + n + 1)
    if name == "N_YEARS_AGO":
        return _year(year.year - n), _year(year.year - n + 1)
    raise KeyError(name)


# -- expressions -------------------------------------------------------------------------------------------------

_FN = re.compile(r"^([A-Z_]+)\((.*)\)$", re.IGNORECASE)


def _date_part(fn: str, v: Any) -> Any:
    if v is None:
        return None
    d = date.fromisoformat(v[:10])
    fn = fn.upper().replace("FISCAL_", "CALENDAR_")
    if fn == "CALENDAR_YEAR":
        return d.year
    if fn == "CALENDAR_MONTH":
        return d.month
    if fn == "CALENDAR_QUARTER":
        return (d.month - 1) // 3 + 1
    if fn == "DAY_IN_MONTH":
        return d.day
    if fn == "DAY_IN_WEEK":
        return (d.weekday() + 1) % 7 + 1
    if fn == "DAY_IN_YEAR":
        return d.timetuple().tm_yday
    if fn == "WEEK_IN_MONTH":
        return (d.day - 1) // 7 + 1
    if fn == "WEEK_IN_YEAR":
        return (d.timetuple().tm_yday - 1) // 7 + 1
    if fn == "HOUR_IN_DAY":
        return int(v[11:13])
    if fn == "DAY_ONLY":
        return v[:10]
    raise KeyError(fn)


class Oracle:
    def __init__(self, frames: Frames, today: date) -> None:
        self.frames = frames
        self.today = today

    # values of an expression (path or FN(path)) for every row
    def values(self, sobject: str, expr: str) -> list[Any]:
        m = _FN.match(expr)
        if m and m.group(1).upper() not in ("COUNT", "SUM", "AVG", "MIN", "MAX", "COUNT_DISTINCT"):
            return [_date_part(m.group(1), v) for v in self.frames.resolve(sobject, m.group(2))]
        return self.frames.resolve(sobject, expr)

    def mask(self, sobject: str, cond: Cond) -> list[bool]:
        n = len(self.frames.frame(sobject))
        if cond is None:
            return [True] * n
        if isinstance(cond, dict) and "and" in cond:
            parts = [self.mask(sobject, c) for c in cond["and"]]
            return [all(p[i] for p in parts) for i in range(n)]
        if isinstance(cond, dict) and "or" in cond:
            parts = [self.mask(sobject, c) for c in cond["or"]]
            return [any(p[i] for p in parts) for i in range(n)]
        if isinstance(cond, dict) and "not" in cond:
            return [not b for b in self.mask(sobject, cond["not"])]
        if isinstance(cond, dict) and "semi" in cond:
            s = cond["semi"]
            child_mask = self.mask(s["object"], s.get("where"))
            child_vals = self.frames.resolve(s["object"], s["field"])
            ids = {
                str(v).lower()
                for v, keep in zip(child_vals, child_mask, strict=True)
                if keep and v is not None
            }
            left = self.values(sobject, s["path"])
            inside = [v is not None and str(v).lower() in ids for v in left]
            return [not b for b in inside] if s.get("negate") else inside
        if isinstance(cond, list) and (not cond or not isinstance(cond[0], str)):
            return self.mask(sobject, {"and": cond})
        path, op, value = cond
        vals = self.values(sobject, path)
        return [self.atom(v, op, value) for v in vals]

    def atom(self, v: Any, op: str, value: Any) -> bool:
        op = op.lower()
        if isinstance(value, dict) and "range" in value:
            start, end = date_range(value["range"], value.get("n"), self.today)
            if v is None:
                return op == "!="
            day = date.fromisoformat(v[:10])
            inside = start <= day < end
            return {
                "=": inside,
                "!=": not inside,
                "<": day < start,
                "<=": day < end,
                ">": day >= end,
                ">=": day >= start,
            }[op]
        if op == "!=":
            return not self.atom(v, "=", value)
        if op == "not in":
            return not self.atom(v, "in", value)
        if op == "in":
            return any(self.atom(v, "=", x) for x in value)
        if value is None:
            return v is None if op == "=" else v is not None
        if v is None:
            return False
        if op == "like":
            return re.fullmatch(like_regex(value), str(v), re.IGNORECASE | re.DOTALL) is not None
        a, b = _comparable(v), _comparable(value)
        return {
            "=": a == b,
            "<": a < b,
            "<=": a <= b,
            ">": a > b,
            ">=": a >= b,
        }[op]

    # -- records ---------------------------------------------------------------------------------------------

    def records(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        sobject = args["object"]
        keep = self.mask(sobject, args.get("where"))
        rows = [i for i, k in enumerate(keep) if k]
        columns = {f: self.values(sobject, f) for f in args["fields"]}
        rows = self.ordered(sobject, rows, args.get("order", []))
        rows = rows[args.get("offset", 0) :]
        if args.get("limit") is not None:
            rows = rows[: args["limit"]]
        return [{f: columns[f][r] for f in args["fields"]} for r in rows]

    def ordered(self, sobject: str, rows: list[int], order: list[list[Any]]) -> list[int]:
        rows = list(rows)  # CSV order is the final tie-breaker (stable sorts)
        for item in reversed(order):
            expr, direction = item[0], (item[1] if len(item) > 1 else "asc").lower()
            nulls = (
                item[2] if len(item) > 2 and item[2] else ("first" if direction == "asc" else "last")
            ).lower()
            vals = self.values(sobject, expr)
            present = [r for r in rows if vals[r] is not None]
            missing = [r for r in rows if vals[r] is None]
            present.sort(key=lambda r: _comparable(vals[r]), reverse=direction == "desc")
            rows = missing + present if nulls == "first" else present + missing
        return rows

    def count(self, args: dict[str, Any]) -> int:
        n = sum(self.mask(args["object"], args.get("where")))
        return min(n, args["limit"]) if args.get("limit") is not None else n

    # -- aggregates ------------------------------------------------------------------------------------------

    def aggregate(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        sobject = args["object"]
        keep = self.mask(sobject, args.get("where"))
        rows = [i for i, k in enumerate(keep) if k]
        groups: dict[tuple[Any, ...], list[int]] = {}
        group_exprs = args.get("group", [])
        group_vals = [self.values(sobject, g) for g in group_exprs]
        for r in rows:
            key = tuple(_group_key(v[r]) for v in group_vals)
            groups.setdefault(key, []).append(r)
        if not group_exprs and not groups:
            groups[()] = []
        out: list[dict[str, Any]] = []
        for key, members in groups.items():
            rec: dict[str, Any] = {}
            env: dict[str, Any] = {}
            for name, expr in args["columns"]:
                value = self.agg_value(sobject, expr, members, group_exprs, group_vals)
                rec[name] = value
                env[expr.upper()] = value
            for expr in args.get("extra", []):
                env[expr.upper()] = self.agg_value(sobject, expr, members, group_exprs, group_vals)
            if all(self.having(env, h) for h in args.get("having", [])):
                rec["__env"] = env
                out.append(rec)
            del key
        for item in reversed(args.get("order", [])):
            expr, direction = item[0].upper(), item[1].lower()
            present = [r for r in out if r["__env"][expr] is not None]
            missing = [r for r in out if r["__env"][expr] is None]
            present.sort(key=lambda rec: _comparable(rec["__env"][expr]), reverse=direction == "desc")
            out = missing + present if direction == "asc" else present + missing
        for rec in out:
            del rec["__env"]
        if args.get("limit") is not None:
            out = out[: args["limit"]]
        return out

    def agg_value(
        self, sobject: str, expr: str, members: list[int], group_exprs: list[str], group_vals: list[list[Any]]
    ) -> Any:
        for g, vals in zip(group_exprs, group_vals, strict=True):
            if g.upper() == expr.upper():
                return vals[members[0]] if members else None
        m = _FN.match(expr)
        assert m, expr
        fn, arg = m.group(1).upper(), m.group(2)
        if fn == "COUNT" and arg == "":
            return len(members)
        vals = [v for v in (self.values(sobject, arg)[r] for r in members) if v is not None]
        if fn == "COUNT":
            return len(vals)
        if fn == "COUNT_DISTINCT":
            return len({_group_key(v) for v in vals})
        if not vals:
            return None
        if fn == "SUM":
            return sum(vals)
        if fn == "AVG":
            return sum(vals) / len(vals)
        if fn == "MIN":
            return min(vals, key=_comparable)
        if fn == "MAX":
            return max(vals, key=_comparable)
        raise KeyError(fn)

    @staticmethod
    def having(env: dict[str, Any], h: list[Any]) -> bool:
        expr, op, value = h
        v = env[expr.upper()]
        if v is None:
            return False
        return {
            "=": v == value,
            ">": v > value,
            "<": v < value,
            ">=": v >= value,
            "<=": v <= value,
            "!=": v != value,
        }[op]

    # -- parent-to-child --------------------------------------------------------------------------------------

    def with_children(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        parents = self.records({**args, "fields": ["Id", *[f for f in args["fields"] if f != "Id"]]})
        child = args["child"]
        kids = self.records({**child, "fields": [*child["fields"], child["fk"]], "limit": None})
        by_parent: dict[str, list[dict[str, Any]]] = {}
        for k in kids:
            by_parent.setdefault(str(k[child["fk"]]).lower(), []).append({f: k[f] for f in child["fields"]})
        out = []
        for p in parents:
            found = by_parent.get(str(p["Id"]).lower(), [])
            if child.get("limit") is not None:
                found = found[: child["limit"]]
            rec = {f: p[f] for f in args["fields"]}
            rec[child["rel"]] = found or None
            out.append(rec)
        return out

    # -- SOSL ------------------------------------------------------------------------------------------------

    def search(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for ret in args["returning"]:
            sobject = ret["object"]
            spec = self.frames.spec(sobject)
            fields = search_fields(spec, args.get("group", "ALL"))
            texts = [self.frames.resolve(sobject, f.name) for f in fields]
            matched = [
                i
                for i in range(len(self.frames.frame(sobject)))
                if fields and term_matches(args["terms"], [tokens(t[i]) for t in texts])
            ]
            keep = self.mask(sobject, ret.get("where"))
            rows = [r for r in matched if keep[r]]
            rows = self.ordered(sobject, rows, ret.get("order", []))
            if ret.get("limit") is not None:
                rows = rows[: ret["limit"]]
            cols = {f: self.values(sobject, f) for f in ret["fields"]}
            out.extend({"type": spec.name, **{f: cols[f][r] for f in ret["fields"]}} for r in rows)
        return out


def like_regex(pattern: str) -> str:
    """SOQL LIKE → regex: % any run, _ one character, \\% and \\_ literal."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return "".join(out)


def search_fields(spec: ObjectSpec, group: str) -> list[Any]:
    text = [f for f in spec.fields if f.type in ("string", "textarea", "email", "phone", "url")]
    if group == "EMAIL":
        return [f for f in text if f.type == "email"]
    if group == "PHONE":
        return [f for f in text if f.type == "phone"]
    if group == "NAME":
        names = {spec.name_field, "FirstName", "LastName"}
        return [f for f in text if f.name in names]
    return text


def tokens(value: Any) -> list[str]:
    """Salesforce-style search tokens: split on non-alphanumerics and where letters meet digits."""
    if value is None:
        return []
    out: list[str] = []
    for word in re.findall(r"[^\W_]+", str(value)):
        out.extend(t.lower() for t in re.findall(r"\d+|[^\W\d_]+", word))
    return out


def term_matches(term: dict[str, Any], fields: list[list[str]]) -> bool:
    if "and" in term:
        return all(term_matches(t, fields) for t in term["and"])
    if "or" in term:
        return any(term_matches(t, fields) for t in term["or"])
    if "andnot" in term:
        a, b = term["andnot"]
        return term_matches(a, fields) and not term_matches(b, fields)
    if "pattern" in term:
        regex = "".join(
            "[^\\W_]*" if c == "*" else "[^\\W_]" if c == "?" else re.escape(c)
            for c in term["pattern"].lower()
        )
        return any(re.fullmatch(regex, t) for f in fields for t in f)
    prefix = "prefix" in term
    want = tokens(term.get("w") or term.get("p") or term.get("prefix"))
    for toks in fields:
        for i in range(len(toks) - len(want) + 1):
            window = toks[i : i + len(want)]
            if window[:-1] == want[:-1] and (
                window[-1].startswith(want[-1]) if prefix else window[-1] == want[-1]
            ):
                return True
    return False


# -- comparing ---------------------------------------------------------------------------------------------------


def _comparable(v: Any) -> Any:
    if isinstance(v, str):
        return v.lower()
    if isinstance(v, bool):
        return int(v)
    return v


def _group_key(v: Any) -> Any:
    return v.lower() if isinstance(v, str) else v


def flatten(record: dict[str, Any], path: str) -> Any:
    """`Account.ShippingState` of an API record (None when a parent on the way is null)."""
    cur: Any = record
    for part in path.split("."):
        if cur is None:
            return None
        key = next((k for k in cur if k.lower() == part.lower()), None)
        assert key is not None, f"the record has no key {part!r}: {sorted(cur)}"
        cur = cur[key]
    return cur


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    return bool(a == b)


def same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]], ordered: bool) -> bool:
    if len(got) != len(want):
        return False
    if not ordered:
        key: Callable[[dict[str, Any]], str] = lambda r: repr(sorted((k, _norm(v)) for k, v in r.items()))  # noqa: E731
        got, want = sorted(got, key=key), sorted(want, key=key)
    return all(set(g) == set(w) and all(same(g[k], w[k]) for k in w) for g, w in zip(got, want, strict=True))


def _norm(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, float):
        return round(v, 9)
    return v
