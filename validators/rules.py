"""Time and business rules: what must hold between records for the benchmark's answers to mean anything.

Cases: ClosedDate exactly on Closed cases and never before CreatedDate. A case lives from its CreatedDate to
its ClosedDate (open cases: to the end of the profile's span); its emails, chats and CaseHistory__c rows fall
inside that lifetime. CaseHistory__c follows CRMArena's semantics (reference/crmarena.md §2.3): one `Case
Creation` row at CreatedDate; a first `Owner Assignment` with an empty OldValue__c; each transfer's
OldValue__c is the previous NewValue__c; Case.OwnerId is the last NewValue__c; one `Case Closed` row at
ClosedDate exactly when the case is Closed; creation and closing rows carry no values. The case's account is
its contact's and its order's; a chat belongs to its case's customer.

Orders: an order is dated on or before the cases about its items, inside its price book's validity; its
items are priced from an entry of its own price book (same product, same unit price); there is exactly one
standard price book and it lists every product; an activated order has items. Every date and datetime falls
inside the profile's time span.

Values that do not parse (schema findings) and references that do not resolve (integrity findings) are
skipped here, so one broken cell is not reported again by every rule that reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from schemas.model import OrgModel
from schemas.profile import Profile
from validators.findings import Finding, finding

SF_DATETIME = "%Y-%m-%dT%H:%M:%S.%f%z"


def _file(sobject: str) -> str:
    return f"data/{sobject}.csv"


def parse_datetimes(col: pd.Series) -> pd.Series:
    """Salesforce datetimes as naive UTC timestamps; NaT where empty or malformed."""
    return pd.to_datetime(col, format=SF_DATETIME, errors="coerce", utc=True).dt.tz_localize(None)


def parse_dates(col: pd.Series) -> pd.Series:
    return pd.to_datetime(col, format="%Y-%m-%d", errors="coerce")


def _iso(value: Any) -> str:
    """A timestamp as a date when it is midnight, else as a UTC datetime."""
    if pd.isna(value):
        return "(empty)"
    ts = pd.Timestamp(value)
    return ts.strftime("%Y-%m-%d") if ts == ts.normalize() else ts.strftime("%Y-%m-%dT%H:%M:%SZ")


class _Emit:
    """Collects findings about rows of one frame."""

    def __init__(self) -> None:
        self.out: list[Finding] = []

    def rows(
        self,
        rule: str,
        frame: pd.DataFrame,
        sobject: str,
        field: str | None,
        message: Callable[[dict[str, Any]], str],
    ) -> None:
        if frame.empty:
            return
        for r in frame.to_dict("records"):
            self.out.append(
                finding(
                    rule,
                    message(r),
                    object=sobject,
                    record=r.get("Id"),
                    field=field,
                    file=_file(sobject),
                    line=r.get("_line"),
                )
            )


def check_rules(raw: dict[str, pd.DataFrame], model: OrgModel, profile: Profile | None) -> list[Finding]:
    emit = _Emit()
    span_end = pd.Timestamp(profile.span.end_dt) if profile else None
    if profile is not None:
        _time_span(raw, model, profile, emit)
    if "Case" in raw:
        cases = _cases(raw["Case"], span_end, emit)
        if "EmailMessage" in raw:
            _emails(raw["EmailMessage"], cases, emit)
        if "LiveChatTranscript" in raw:
            _chats(raw["LiveChatTranscript"], cases, emit)
        if "CaseHistory__c" in raw:
            _history(raw["CaseHistory__c"], cases, emit)
        _case_customer(raw, cases, emit)
        _chat_customer(raw, cases, emit)
    _orders(raw, emit)
    return emit.out


# -- time span ----------------------------------------------------------------------------------------------


def _time_span(raw: dict[str, pd.DataFrame], model: OrgModel, profile: Profile, emit: _Emit) -> None:
    start, end = pd.Timestamp(profile.span.start_dt), pd.Timestamp(profile.span.end_dt)
    where = (
        f"{profile.span.start.isoformat()} to {profile.span.end.isoformat()} ([time] of {profile.path.name})"
    )
    for spec in model:
        frame = raw.get(spec.name)
        if frame is None:
            continue
        for f in spec.fields:
            if f.type not in ("datetime", "date"):
                continue
            when = parse_datetimes(frame[f.name]) if f.type == "datetime" else parse_dates(frame[f.name])
            bad = frame[((when < start) | (when >= end)).to_numpy()]

            def outside(r: dict[str, Any], n: str = f.name, o: str = spec.name) -> str:
                return f"{o} {r['Id']}: `{n}` is {r[n]}, outside the profile's span {where}."

            emit.rows("rules.time-span", bad, spec.name, f.name, outside)


# -- cases ----------------------------------------------------------------------------------------------------


def _cases(cases: pd.DataFrame, span_end: pd.Timestamp | None, emit: _Emit) -> pd.DataFrame:
    c = cases.copy()
    c["_created"] = parse_datetimes(c["CreatedDate"])
    c["_closed"] = parse_datetimes(c["ClosedDate"])
    is_closed = (c["Status"] == "Closed").to_numpy()
    has_date = c["ClosedDate"].notna().to_numpy()
    emit.rows(
        "rules.case-closed-date",
        c[is_closed & ~has_date],
        "Case",
        "ClosedDate",
        lambda r: f"Case {r['Id']} is Closed but has no ClosedDate; a closed case needs the time it closed.",
    )
    emit.rows(
        "rules.case-closed-date",
        c[~is_closed & has_date],
        "Case",
        "ClosedDate",
        lambda r: (
            f"Case {r['Id']} has ClosedDate {r['ClosedDate']} but its Status is `{r['Status']}`; ClosedDate "
            "belongs only on Closed cases (clear it, or set Status to Closed)."
        ),
    )
    emit.rows(
        "rules.case-closed-before-created",
        c[(c["_closed"] < c["_created"]).to_numpy()],
        "Case",
        "ClosedDate",
        lambda r: (
            f"Case {r['Id']} closes at {r['ClosedDate']}, before it was created at {r['CreatedDate']}; "
            "ClosedDate must not be earlier than CreatedDate."
        ),
    )
    end = span_end if span_end is not None else pd.Timestamp.max
    c["_end"] = c["_closed"].where(c["_closed"].notna(), end)
    c["_closed_flag"] = is_closed
    return c


def by_id(frame: pd.DataFrame, column: str) -> pd.Series:
    """`column` of `frame` by Id, from the first row of each Id: `frame.drop_duplicates("Id").set_index("Id")`'s
    column, without copying the frame's other columns twice (OrderItem's are 7.1 M rows at scale 1,000)."""
    return frame[["Id", column]].drop_duplicates("Id").set_index("Id")[column]


def _lifetime(row: dict[str, Any]) -> str:
    until = row["c_ClosedDate"] if row.get("c_ClosedDate") else "the end of the span (still open)"
    return f"its case {row['c_Id']} lives from {row['c_CreatedDate']} to {until}"


def _join_case(frame: pd.DataFrame, key: str, cases: pd.DataFrame) -> pd.DataFrame:
    # only the cases `frame` names are made distinct (the first of each id is kept, as among all of them): the
    # rules join the few rows they report, several times per rule, not the whole case table each time
    named = cases[cases["Id"].isin(frame[key]).to_numpy()]
    c = named[
        ["Id", "CreatedDate", "ClosedDate", "_created", "_end", "AccountId", "ContactId"]
    ].drop_duplicates("Id")
    c = c.add_prefix("c_")
    return frame.merge(c, left_on=key, right_on="c_Id", how="inner")


class CaseSpans:
    """The cases the rules join a record to, as `_join_case` keeps them (the first case of each id), numbered
    by their place here, with what the rules read of each: its id, start and end, whether it is Closed and
    when it closed. Made once for an object whose records name cases, then asked about a block of its rows at
    a time (`at`): a lookup in an index of the case ids, not a merge of every row with the cases (its copy of
    the key and its factorised keys were ~60 MB of the history step at scale 300)."""

    def __init__(self, cases: pd.DataFrame) -> None:
        c = cases[["Id", "_created", "_end", "_closed", "_closed_flag"]].drop_duplicates("Id")
        self.ids = c["Id"].to_numpy(dtype=object)
        self.created = c["_created"].to_numpy()
        self.end = c["_end"].to_numpy()
        self.closed = c["_closed"].to_numpy()
        self.is_closed = c["_closed_flag"].to_numpy(dtype=bool)
        given = ~pd.isna(self.ids)
        self._index = pd.Index(self.ids[given], dtype=object)
        self._given = np.flatnonzero(given)
        none = np.flatnonzero(~given)
        # the case without an id (at most one is kept): a record without a key joins it, as a merge joins them
        self.none = int(none[0]) if len(none) else -1

    def __len__(self) -> int:
        return len(self.ids)

    def at(self, keys: np.ndarray) -> np.ndarray:
        """Each key's case: its place here (int32), -1 where it names none of them."""
        found = self._index.get_indexer(keys)
        at = np.full(len(keys), -1, dtype=np.int32)
        hit = found >= 0
        at[hit] = self._given[found[hit]]
        missing = pd.isna(keys)
        if missing.any():
            at[missing] = self.none
        return at

    def ranks(self) -> np.ndarray:
        """Each case's place in the order of the case ids (the case without an id last)."""
        codes, _ = pd.factorize(self.ids, sort=True)
        codes[codes < 0] = len(codes)
        return codes


def _case_span(
    frame: pd.DataFrame, key: str, cases: pd.DataFrame | CaseSpans
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row of `frame`, in its order: whether `_join_case` keeps it (its case is among `cases`), and
    its case's start and end (`c__created`, `c__end`; NaT where it has none). What the rules' masks read of
    the join, without a copy of `frame` and the case's columns beside it (at scale 1,000, 3.2 M emails and
    3.4 M history rows): the few rows reported are joined afterwards."""
    spans = cases if isinstance(cases, CaseSpans) else CaseSpans(cases)
    at = spans.at(frame[key].to_numpy(dtype=object))
    return at >= 0, _taken(spans.created, at), _taken(spans.end, at)


def _taken(values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """`values` at the places `at`, NaT where `at` is -1 (its times: a left join's missing rows)."""
    nat = np.array(["NaT"], dtype=values.dtype if values.dtype.kind == "M" else "datetime64[ns]")
    return np.append(values, nat).take(np.where(at >= 0, at, len(values)))


def _emails(emails: pd.DataFrame, cases: pd.DataFrame, emit: _Emit, spans: CaseSpans | None = None) -> None:
    """`rules.email-outside-case`; with `spans` (the cases' `CaseSpans`, made once), on a block of the emails
    at a time: each email is checked alone, so the findings of the blocks, in their order, are those of all."""
    joined, created, end = _case_span(emails, "ParentId", spans if spans is not None else cases)
    when = parse_datetimes(emails["MessageDate"]).to_numpy()
    bad = joined & ((when < created) | (when > end))
    if not bad.any():
        return  # (a block's join of no rows would still look through every case)
    emit.rows(
        "rules.email-outside-case",
        _join_case(emails[bad], "ParentId", cases),
        "EmailMessage",
        "MessageDate",
        lambda r: (
            f"EmailMessage {r['Id']} is dated {r['MessageDate']}, but {_lifetime(r)}; an email must fall "
            "inside its case's lifetime."
        ),
    )


def _chats(chats: pd.DataFrame, cases: pd.DataFrame, emit: _Emit) -> None:
    ch = _join_case(chats, "CaseId", cases)
    start, end = parse_datetimes(ch["StartTime"]), parse_datetimes(ch["EndTime"])
    early = (start < ch["c__created"]) | (end < ch["c__created"])
    late = (end > ch["c__end"]) | (start > ch["c__end"])
    emit.rows(
        "rules.chat-outside-case",
        ch[early.to_numpy()],
        "LiveChatTranscript",
        "StartTime",
        lambda r: (
            f"LiveChatTranscript {r['Id']} runs {r['StartTime']} to {r['EndTime']}, but {_lifetime(r)}; a "
            "chat cannot start before its case was created."
        ),
    )
    emit.rows(
        "rules.chat-outside-case",
        ch[(late & ~early).to_numpy()],
        "LiveChatTranscript",
        "EndTime",
        lambda r: (
            f"LiveChatTranscript {r['Id']} runs {r['StartTime']} to {r['EndTime']}, but {_lifetime(r)}; a "
            "chat cannot end after its case closed."
        ),
    )
    s_all, e_all = parse_datetimes(chats["StartTime"]), parse_datetimes(chats["EndTime"])
    emit.rows(
        "rules.chat-times",
        chats[(e_all < s_all).to_numpy()],
        "LiveChatTranscript",
        "EndTime",
        lambda r: (
            f"LiveChatTranscript {r['Id']} ends at {r['EndTime']}, before it starts at {r['StartTime']}."
        ),
    )
    duration = pd.to_numeric(chats["ChatDuration"], errors="coerce")
    seconds = (e_all - s_all).dt.total_seconds()
    wrong = duration.notna() & seconds.notna() & (e_all >= s_all) & (duration != seconds)
    emit.rows(
        "rules.chat-times",
        chats[wrong.to_numpy()].assign(_seconds=seconds[wrong.to_numpy()].astype("int64")),
        "LiveChatTranscript",
        "ChatDuration",
        lambda r: (
            f"LiveChatTranscript {r['Id']}: ChatDuration is {r['ChatDuration']} but StartTime to EndTime is "
            f"{r['_seconds']} seconds; they must agree."
        ),
    )


HISTORY_KINDS = ("Case Creation", "Owner Assignment", "Case Closed")
CREATION, ASSIGNMENT, CLOSING = range(len(HISTORY_KINDS))
# what a reported history row says (with its `_line`)
HISTORY_COLUMNS = ("Id", "CaseId__c", "Field__c", "OldValue__c", "NewValue__c", "CreatedDate")


# `HistoryRows`' arrays and their types
_HISTORY_ARRAYS: dict[str, Any] = {
    "case": np.int32,
    "t": "datetime64[ns]",
    "line": np.int64,
    "kind": np.int8,
    "old": np.int32,
    "new": np.int32,
}


class HistoryRows:
    """CaseHistory__c as `_history` reads it, in file order, given a block of rows at a time (`feed`): each row's
    case (its place among `spans`, -1 when it names none of them), time, line, kind (its place in
    HISTORY_KINDS, or past them) and its OldValue__c and NewValue__c as numbers of their distinct values (-1
    when empty). ~30 bytes a row, not its strings: at scale 1,000 the history's 3.4 M rows were ~0.8 GB held
    as strings for this one step. The rows reported are read again (`history_findings`'s `fetch`)."""

    def __init__(self, spans: CaseSpans) -> None:
        self.spans = spans
        self.values: dict[str, int] = {}  # each value OldValue__c or NewValue__c holds → its number
        # each array's blocks, after an empty one of its type
        self._parts: dict[str, list[np.ndarray]] = {
            k: [np.zeros(0, dtype=dtype)] for k, dtype in _HISTORY_ARRAYS.items()
        }

    def feed(self, block: pd.DataFrame) -> None:
        parts = self._parts
        parts["case"].append(self.spans.at(block["CaseId__c"].to_numpy(dtype=object)))
        parts["t"].append(parse_datetimes(block["CreatedDate"]).to_numpy(dtype="datetime64[ns]"))
        parts["line"].append(block["_line"].to_numpy(dtype=np.int64))
        field = block["Field__c"].to_numpy(dtype=object)
        kind = np.full(len(block), len(HISTORY_KINDS), dtype=np.int8)
        for k, name in enumerate(HISTORY_KINDS):
            kind[field == name] = k
        parts["kind"].append(kind)
        parts["old"].append(self._numbers(block["OldValue__c"]))
        parts["new"].append(self._numbers(block["NewValue__c"]))

    def _numbers(self, column: pd.Series) -> np.ndarray:
        codes, uniques = pd.factorize(column.to_numpy(dtype=object), use_na_sentinel=True)
        # the block's numbers → the shared ones, and -1 (empty) → -1, the table's last entry
        table = [self.values.setdefault(u, len(self.values)) for u in uniques.tolist()]
        return np.array([*table, -1], dtype=np.int32)[codes]

    def column(self, name: str) -> np.ndarray:
        """One of the rows' arrays (case, t, line, kind, old, new), its blocks joined once."""
        parts = self._parts[name]
        if len(parts) != 1:
            parts[:] = [np.concatenate(parts)]
        return parts[0]


def _history(hist: pd.DataFrame, cases: pd.DataFrame, emit: _Emit) -> None:
    rows = HistoryRows(CaseSpans(cases))
    rows.feed(hist)
    history_findings(rows, cases, emit, lambda at: hist.take(at))


def _run_ranks(keys: np.ndarray) -> np.ndarray:
    """Each element's rank within its run of equal `keys` (rows sorted by key: `groupby().cumcount()`)."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.append(True, keys[1:] != keys[:-1]))
    return np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))


def history_findings(
    rows: HistoryRows, cases: pd.DataFrame, emit: _Emit, fetch: Callable[[np.ndarray], pd.DataFrame]
) -> None:
    """The rules of CaseHistory__c on `rows` (their cases: `cases`, as `_cases` gives them). `fetch(at)` gives
    the history rows at the file positions `at` (ascending), with HISTORY_COLUMNS and `_line`: the rows
    reported, all fetched at once, then reported rule by rule in the order of case, time and line.

    A row is read with its case (as `_join_case` joins them: a row without a case id joins the case without
    an id, if any, and is nobody's first or later row of a kind, as pandas' grouping leaves it out)."""
    spans = rows.spans
    case, t = rows.column("case"), rows.column("t")
    kept = np.flatnonzero(case >= 0)
    order = kept[_sorted_order(spans.ranks()[case[kept]], t[kept], rows.column("line")[kept])]
    del kept
    cs, ts, kind = case[order], t[order], rows.column("kind")[order]
    old, new = rows.column("old")[order], rows.column("new")[order]
    keyed = cs != spans.none  # rows with a case id: pandas' groups
    names = np.array([*rows.values, None], dtype=object)  # a value's number → the value (-1: None)
    case_at = spans.at(cases["Id"].to_numpy(dtype=object))  # each case row's place among `spans`
    # each report: its rule, rows (history rows as places in `order`, or case rows), object, field, message,
    # whether its rows are joined to their cases' columns, and the columns added to them
    pending: list[
        tuple[
            str,
            np.ndarray | pd.DataFrame,
            str,
            str | None,
            Callable[[dict[str, Any]], str],
            bool,
            dict[str, np.ndarray],
        ]
    ] = []

    def report(
        rule: str,
        at: np.ndarray | pd.DataFrame,
        sobject: str,
        field: str | None,
        message: Callable[[dict[str, Any]], str],
        join: bool = False,
        **columns: np.ndarray,
    ) -> None:
        if len(at):
            pending.append((rule, at, sobject, field, message, join, columns))

    def case_rows(hit: np.ndarray) -> pd.DataFrame:
        # the case rows with an id and none of the history rows `hit` (a mask over the cases' places) marks
        return cases[cases["Id"].notna().to_numpy() & ~hit[case_at]]

    report(
        "rules.history-outside-case",
        np.flatnonzero((ts < spans.created[cs]) | (ts > spans.end[cs])),
        "CaseHistory__c",
        "CreatedDate",
        lambda r: (
            f"CaseHistory__c {r['Id']} ({r['Field__c']}) is dated {r['CreatedDate']}, but {_lifetime(r)}."
        ),
        join=True,
    )
    report(
        "rules.history-values",
        np.flatnonzero(((kind == CREATION) | (kind == CLOSING)) & ((old >= 0) | (new >= 0))),
        "CaseHistory__c",
        "NewValue__c",
        lambda r: (
            f"CaseHistory__c {r['Id']} is a `{r['Field__c']}` row but carries OldValue__c "
            f"{r['OldValue__c'] or '(empty)'} / NewValue__c {r['NewValue__c'] or '(empty)'}; only `Owner Assignment` "
            "rows hold user ids."
        ),
    )
    assign = np.flatnonzero(kind == ASSIGNMENT)
    report(
        "rules.history-values",
        assign[new[assign] < 0],
        "CaseHistory__c",
        "NewValue__c",
        lambda r: (
            f"CaseHistory__c {r['Id']} is an `Owner Assignment` of case {r['CaseId__c']} with no NewValue__c; "
            "it must name the user the case was assigned to."
        ),
    )
    # Creation rows: each case's first by time, then line
    creation = np.flatnonzero((kind == CREATION) & keyed)
    k = _run_ranks(cs[creation])
    has = np.zeros(len(spans), dtype=bool)
    has[cs[creation]] = True
    report(
        "rules.history-creation",
        case_rows(has),
        "Case",
        None,
        lambda r: (
            f"Case {r['Id']} has no `Case Creation` row in CaseHistory__c; every case needs one at its "
            f"CreatedDate ({r['CreatedDate']})."
        ),
    )
    report(
        "rules.history-creation",
        creation[k > 0],
        "CaseHistory__c",
        "Field__c",
        lambda r: (
            f"CaseHistory__c {r['Id']} is a second `Case Creation` row for case {r['CaseId__c']}; a case is "
            "created once."
        ),
    )
    first = creation[k == 0]
    report(
        "rules.history-creation",
        first[ts[first] != spans.created[cs[first]]],
        "CaseHistory__c",
        "CreatedDate",
        lambda r: (
            f"CaseHistory__c {r['Id']} (`Case Creation`) is dated {r['CreatedDate']}, but case {r['CaseId__c']} "
            f"was created at {r['c_CreatedDate']}; they must be equal."
        ),
        join=True,
    )
    del creation, first
    # Owner assignments: first, chain, last
    assign = assign[keyed[assign]]
    k = _run_ranks(cs[assign])
    # the previous assignment's NewValue__c (-2: none) against OldValue__c, an empty value as ""
    prev = np.where(k > 0, np.append(-2, new[assign][:-1]), -2)
    empty = rows.values.get("", -1)
    has = np.zeros(len(spans), dtype=bool)
    has[cs[assign]] = True
    report(
        "rules.history-first-assignment",
        case_rows(has),
        "Case",
        None,
        lambda r: (
            f"Case {r['Id']} has no `Owner Assignment` row in CaseHistory__c; its first assignment (to "
            f"{r['OwnerId']} if it was never transferred) must be recorded."
        ),
    )
    report(
        "rules.history-first-assignment",
        assign[(k == 0) & (old[assign] >= 0)],
        "CaseHistory__c",
        "OldValue__c",
        lambda r: (
            f"CaseHistory__c {r['Id']} is the first `Owner Assignment` of case {r['CaseId__c']} but its "
            f"OldValue__c is {r['OldValue__c']}; a first assignment has an empty OldValue__c."
        ),
    )
    blank = np.where(old[assign] < 0, empty, old[assign]) != np.where(prev < 0, empty, prev)
    broken = (k > 0) & blank
    report(
        "rules.history-transfer-chain",
        assign[broken],
        "CaseHistory__c",
        "OldValue__c",
        lambda r: (
            f"CaseHistory__c {r['Id']} transfers case {r['CaseId__c']} from {r['OldValue__c'] or '(empty)'}, "
            f"but the case was last assigned to {r['_prev'] or '(empty)'}; OldValue__c must be the previous NewValue__c."
        ),
        _prev=names[prev[broken]],
    )
    # each case's last assignment: the end of its run (its rows are together, sorted by case)
    ends = np.append(cs[assign][1:] != cs[assign][:-1], True) if len(assign) else np.zeros(0, dtype=bool)
    last = np.full(len(spans), -1, dtype=np.int64)
    last[cs[assign][ends]] = new[assign][ends]
    del ends, prev, blank, broken
    owners = cases.assign(_last=names[last[case_at]])
    mismatch = owners["_last"].notna() & (owners["OwnerId"].fillna("") != owners["_last"].fillna(""))
    report(
        "rules.history-owner",
        owners[mismatch.to_numpy()],
        "Case",
        "OwnerId",
        lambda r: (
            f"Case {r['Id']} is owned by {r['OwnerId'] or '(nobody)'}, but its last `Owner Assignment` in "
            f"CaseHistory__c gives it to {r['_last']}; OwnerId must be the last assignee."
        ),
    )
    del assign, last, owners, mismatch
    # Closing rows
    closing = np.flatnonzero(kind == CLOSING)
    k = np.full(len(closing), -1, dtype=np.int64)  # (a row without a case id: nobody's first or second)
    k[keyed[closing]] = _run_ranks(cs[closing[keyed[closing]]])
    has = np.zeros(len(spans), dtype=bool)
    has[cs[closing]] = True
    report(
        "rules.history-closed",
        cases[spans.is_closed[case_at] & ~has[case_at]],
        "Case",
        None,
        lambda r: (
            f"Case {r['Id']} is Closed but has no `Case Closed` row in CaseHistory__c; add one at its "
            f"ClosedDate ({r['ClosedDate'] or 'missing'})."
        ),
    )
    closed = spans.is_closed[cs[closing]]
    report(
        "rules.history-closed",
        closing[~closed],
        "CaseHistory__c",
        "Field__c",
        lambda r: (
            f"CaseHistory__c {r['Id']} closes case {r['CaseId__c']}, which is not Closed; a `Case Closed` row "
            "exists exactly when the case is Closed."
        ),
    )
    report(
        "rules.history-closed",
        closing[closed & (k > 0)],
        "CaseHistory__c",
        "Field__c",
        lambda r: (
            f"CaseHistory__c {r['Id']} is a second `Case Closed` row for case {r['CaseId__c']}; a case closes once."
        ),
    )
    # Only against a ClosedDate that exists (a missing one is rules.case-closed-date).
    closed_at = spans.closed[cs[closing]]
    report(
        "rules.history-closed",
        closing[closed & (k == 0) & ~np.isnat(closed_at) & (ts[closing] != closed_at)],
        "CaseHistory__c",
        "CreatedDate",
        lambda r: (
            f"CaseHistory__c {r['Id']} (`Case Closed`) is dated {r['CreatedDate']}, but case {r['CaseId__c']} "
            f"closed at {r['c_ClosedDate']}; they must be equal."
        ),
        join=True,
    )
    del closing, closed, closed_at, k
    # the history rows reported, read at once, then each report in its order
    wanted = [at for at in (p[1] for p in pending) if isinstance(at, np.ndarray)]
    files = np.unique(order[np.concatenate(wanted)]) if wanted else np.zeros(0, dtype=np.int64)
    got = fetch(files).reset_index(drop=True) if len(files) else None
    for rule, at, sobject, field, message, join, columns in pending:
        if isinstance(at, np.ndarray):
            assert got is not None
            frame = got.take(np.searchsorted(files, order[at])).reset_index(drop=True)
            for name, values in columns.items():
                frame[name] = values
            at = _join_case(frame, "CaseId__c", cases) if join else frame
        emit.rows(rule, at, sobject, field, message)


def _sorted_order(ranks: np.ndarray, times: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """The order of rows by their case's rank (`CaseSpans.ranks`: the order of their case ids), time and line
    (a missing time after the others; ties in place), as a stable `sort_values` of a frame of the three gives
    it: from numbers, not a frame of the keys (at scale 300, the history's 1 M keys sorted as strings took
    ~90 MB above the step's start)."""
    return np.lexsort((lines, times.view(np.int64), np.isnat(times), ranks))


def _case_customer(raw: dict[str, pd.DataFrame], cases: pd.DataFrame, emit: _Emit) -> None:
    if "Contact" in raw:
        contacts = by_id(raw["Contact"], "AccountId")
        c = cases.assign(_contact_account=cases["ContactId"].map(contacts))
        bad = (
            c["_contact_account"].notna() & c["AccountId"].notna() & (c["_contact_account"] != c["AccountId"])
        )
        emit.rows(
            "rules.case-customer",
            c[bad.to_numpy()],
            "Case",
            "AccountId",
            lambda r: (
                f"Case {r['Id']} belongs to Account {r['AccountId']}, but its contact {r['ContactId']} belongs "
                f"to Account {r['_contact_account']}; a case's account is its contact's."
            ),
        )
    if "OrderItem" in raw and "Order" in raw:
        # the items and orders the cases name, then the first row of each id among them (the first among all
        # rows of that id): not every item's and order's id hashed twice (7.1 M and 2.1 M at scale 1,000)
        items, orders = raw["OrderItem"], raw["Order"]
        item_order = by_id(items[items["Id"].isin(cases["OrderItemId__c"]).to_numpy()], "OrderId")
        c = cases.assign(_order=cases["OrderItemId__c"].map(item_order))
        orders = orders[orders["Id"].isin(c["_order"]).to_numpy()]
        order_acc = by_id(orders, "AccountId")
        c["_order_account"] = c["_order"].map(order_acc)
        bad = c["_order_account"].notna() & c["AccountId"].notna() & (c["_order_account"] != c["AccountId"])
        emit.rows(
            "rules.case-customer",
            c[bad.to_numpy()],
            "Case",
            "AccountId",
            lambda r: (
                f"Case {r['Id']} belongs to Account {r['AccountId']}, but it is about order item "
                f"{r['OrderItemId__c']} of Order {r['_order']}, placed by Account {r['_order_account']}; a customer opens "
                "cases about their own orders."
            ),
        )
        order_date = by_id(orders, "EffectiveDate")
        c["_order_date"] = parse_dates(c["_order"].map(order_date))
        late = c["_order_date"].notna() & (c["_order_date"] > c["_created"].dt.normalize())
        emit.rows(
            "rules.order-after-case",
            c[late.to_numpy()],
            "Case",
            "CreatedDate",
            lambda r: (
                f"Case {r['Id']} was created at {r['CreatedDate']} about order item {r['OrderItemId__c']}, but "
                f"its Order {r['_order']} is dated {_iso(r['_order_date'])}; an order is placed on or before the cases "
                "about it."
            ),
        )


def _chat_customer(raw: dict[str, pd.DataFrame], cases: pd.DataFrame, emit: _Emit) -> None:
    """A chat is with its case's customer (apart from `_case_customer`, which reads the orders: staged
    validation lets the orders go before it reads the chats)."""
    if "LiveChatTranscript" in raw:
        ch = _join_case(raw["LiveChatTranscript"], "CaseId", cases)
        for col in ("AccountId", "ContactId"):
            bad = ch[col].fillna("") != ch[f"c_{col}"].fillna("")

            def other_customer(r: dict[str, Any], col: str = col) -> str:
                return (
                    f"LiveChatTranscript {r['Id']} has {col} {r[col] or '(empty)'}, but its case "
                    f"{r['CaseId']} has {r['c_' + col] or '(empty)'}; a chat is with its case's customer."
                )

            emit.rows("rules.chat-customer", ch[bad.to_numpy()], "LiveChatTranscript", col, other_customer)


# -- orders and price books ---------------------------------------------------------------------------------


def _orders(raw: dict[str, pd.DataFrame], emit: _Emit, has_items: np.ndarray | None = None) -> None:
    """The price books, the orders and their items. `has_items` (whether some item names it, per Order row)
    is for a reader that read the items a block at a time (and checked each block with `_order_items`): it
    gives no OrderItem frame."""
    books = raw.get("Pricebook2")
    entries = raw.get("PricebookEntry")
    orders = raw.get("Order")
    items = raw.get("OrderItem")
    products = raw.get("Product2")
    if books is not None:
        standard = books[(books["IsStandard"] == "true").to_numpy()]
        if len(standard) == 0:
            emit.out.append(
                finding(
                    "rules.standard-pricebook",
                    "No Pricebook2 has IsStandard = true; every product needs a list price in the standard price "
                    "book before any other book can list it.",
                    object="Pricebook2",
                    file=_file("Pricebook2"),
                )
            )
        emit.rows(
            "rules.standard-pricebook",
            standard.iloc[1:],
            "Pricebook2",
            "IsStandard",
            lambda r: (
                f"Pricebook2 {r['Id']} is a second standard price book (the first is {standard['Id'].iat[0]}); "
                "an org has exactly one."
            ),
        )
        if entries is not None and products is not None and len(standard):
            std_ids = set(standard["Id"])
            listed = set(entries.loc[entries["Pricebook2Id"].isin(std_ids).to_numpy(), "Product2Id"].tolist())
            emit.rows(
                "rules.standard-price",
                products[~products["Id"].isin(listed).to_numpy() & products["Id"].notna().to_numpy()],
                "Product2",
                None,
                lambda r: (
                    f"Product2 {r['Id']} ({r['Name']}) has no entry in the standard price book; a real org "
                    "refuses its other entries and order items (STANDARD_PRICE_NOT_DEFINED). Add a standard price."
                ),
            )
    if orders is not None and (items is not None or has_items is not None):
        activated = (orders["Status"] == "Activated").to_numpy()
        if has_items is None:
            assert items is not None
            # the orders that have an item, gathered a slice of items at a time (not a list of all 7.1 M
            # OrderIds at scale 1,000), asked about the activated orders only
            ordered: set[Any] = set()
            for lo in range(0, len(items), ITEM_SLICE):
                ordered.update(items["OrderId"].iloc[lo : lo + ITEM_SLICE].dropna().tolist())
            has_items = np.zeros(len(orders), dtype=bool)
            has_items[activated] = orders["Id"][activated].isin(ordered).to_numpy()
        emit.rows(
            "rules.activated-order-items",
            orders[activated & ~has_items],
            "Order",
            "Status",
            lambda r: (
                f"Order {r['Id']} is Activated but has no OrderItem; an order is activated only after its "
                "items exist (add items or set Status to Draft)."
            ),
        )
    if orders is not None and books is not None:
        b = books.drop_duplicates("Id").set_index("Id")
        # each book's dates parsed once, then looked up per order (not a string per order parsed: 2.1 M at
        # scale 1,000); the dates are given to the few orders reported, not added to a copy of the orders
        valid_from = orders["Pricebook2Id"].map(parse_datetimes(b["ValidFrom"]).dt.normalize())
        valid_to = orders["Pricebook2Id"].map(parse_datetimes(b["ValidTo"]).dt.normalize())
        day = parse_dates(orders["EffectiveDate"])
        at = ((valid_from.notna() & (day < valid_from)) | (valid_to.notna() & (day > valid_to))).to_numpy()
        emit.rows(
            "rules.order-pricebook-dates",
            orders[at].assign(_from=valid_from[at], _to=valid_to[at], _date=day[at]),
            "Order",
            "EffectiveDate",
            lambda r: (
                f"Order {r['Id']} is dated {r['EffectiveDate']}, outside the validity of its price book "
                f"{r['Pricebook2Id']} ({_iso(r['_from'])} to {_iso(r['_to'])})."
            ),
        )
    if items is not None and entries is not None and orders is not None:
        _order_items(items, entries, orders, emit)


# order items looked up at a time: the looked-up columns and masks are made for this many items, not for all of
# them (at scale 1,000, 7.1 M items: each such column is 57 MB of pointers, and four were held at once)
ITEM_SLICE = 1 << 20


def _order_items(items: pd.DataFrame, entries: pd.DataFrame, orders: pd.DataFrame, emit: _Emit) -> None:
    """Each order item against its price book entry and its order's price book, ITEM_SLICE items at a time."""
    e, book_of_order = item_lookups(entries, orders)
    for lo in range(0, len(items), ITEM_SLICE):
        _order_item_slice(items.iloc[lo : lo + ITEM_SLICE], e, book_of_order, emit)


def item_lookups(entries: pd.DataFrame, orders: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """What `_order_item_slice` looks the items up in: the entries by Id (the first row of each) and each
    order's price book."""
    return entries.drop_duplicates("Id").set_index("Id"), by_id(orders, "Pricebook2Id")


def _order_item_slice(items: pd.DataFrame, e: pd.DataFrame, book_of_order: pd.Series, emit: _Emit) -> None:
    """`_order_items` for some items. The items' looked-up values are made one or two at a time and given to
    the few rows reported, not added to a copy of the items."""
    entry_ids = items["PricebookEntryId"]

    def reported(mask: pd.Series, **looked_up: pd.Series) -> pd.DataFrame:
        at = mask.to_numpy()
        return items[at].assign(**{k: v[at] for k, v in looked_up.items()})

    entry_book = entry_ids.map(e["Pricebook2Id"])
    order_book = items["OrderId"].map(book_of_order)
    resolved = entry_book.notna() & order_book.notna()
    emit.rows(
        "rules.order-item-pricebook",
        reported(resolved & (entry_book != order_book), _entry_book=entry_book, _order_book=order_book),
        "OrderItem",
        "PricebookEntryId",
        lambda r: (
            f"OrderItem {r['Id']} is priced from PricebookEntry {r['PricebookEntryId']} of price book "
            f"{r['_entry_book']}, but its Order {r['OrderId']} uses price book {r['_order_book']}; use the entry of "
            "the order's own book (a real org refuses this with FIELD_INTEGRITY_EXCEPTION)."
        ),
    )
    del entry_book, order_book, resolved
    entry_product = entry_ids.map(e["Product2Id"])
    emit.rows(
        "rules.order-item-product",
        reported(
            entry_product.notna() & (entry_product != items["Product2Id"]), _entry_product=entry_product
        ),
        "OrderItem",
        "Product2Id",
        lambda r: (
            f"OrderItem {r['Id']} is for Product2 {r['Product2Id']}, but its PricebookEntry "
            f"{r['PricebookEntryId']} prices Product2 {r['_entry_product']}; they must be the same product."
        ),
    )
    del entry_product
    entry_price = entry_ids.map(e["UnitPrice"])
    price = pd.to_numeric(items["UnitPrice"], errors="coerce")
    listed = pd.to_numeric(entry_price, errors="coerce")
    differs = price.notna() & listed.notna() & ((price - listed).abs() > 0.005)
    emit.rows(
        "rules.order-item-price",
        reported(differs, _entry_price=entry_price),
        "OrderItem",
        "UnitPrice",
        lambda r: (
            f"OrderItem {r['Id']} has UnitPrice {r['UnitPrice']}, but its PricebookEntry "
            f"{r['PricebookEntryId']} lists {r['_entry_price']}; items are priced from their entry."
        ),
    )
