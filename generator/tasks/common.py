"""Shared machinery of the task builders: the org's data as indexed frames, time windows, instances and the
sampler that enforces CRMArena's shape (unique answers, None quotas, no dominant answer).

Time-window semantics (reference §6), used by every builder:
- `today` is a date; the window end of a relative period is today at 00:00Z and its start is
  `end − N × unit` (calendar arithmetic; week = 7 days, quarter = 3 months, year = 12 months).
- Named periods: a month is [1st, 1st of next month); Qk is [1st of month 3k−2, +3 months); Spring/Summer/Fall/
  Winter start in months 3/6/9/12 of the given year and last three months ("Winter 2021" = 2021-12-01 →
  2022-03-01). Named periods are not clipped to today; orgseed only asks about periods that have ended by
  `today`.
- Whether a window's end is inclusive depends on the task, exactly as the reference solvers do (documented in
  each builder and in the policy text the agent receives).
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from dateutil.relativedelta import relativedelta

from orgs.bundle import Bundle, type_frame
from schemas.errors import Terminal
from schemas.model import OrgModel, load_model
from schemas.taskspec import MONTHS

SEASON_START = {"Spring": 3, "Summer": 6, "Fall": 9, "Autumn": 9, "Winter": 12}
# Units a query may name. CRMArena's get_start_date takes day/week/month/quarter only, so a "past year"
# window is recorded in the ground-truth params as 12 months per year (`relative_window`).
UNITS = ("day", "week", "month", "quarter", "year")

DOMAIN_DETAILS = """# Domain Details
## Quarters of the Year
- Q1: January 1 to March 31
- Q2: April 1 to June 30
- Q3: July 1 to September 30
- Q4: October 1 to December 31
## Seasons
- Spring: March 1 to May 31
- Summer: June 1 to August 31
- Fall (Autumn): September 1 to November 30
- Winter: December 1 to the last day of February of the following year ("Winter 2021" runs from
  2021-12-01 to 2022-02-28)
## Time Periods
- "Past N days/weeks/months/quarters/years" ends at today's date (00:00, not included for case creation) and
  starts N units earlier; a week is 7 days, a quarter 3 months, a year 12 months.
- "Past two quarters" means the six months before today.
- A month "significantly exceeds" the others when its case count is strictly greater than every other
  month's count."""


class TaskBuildError(Terminal):
    """Task instances cannot be built as asked (names the task and what to change)."""


def iso(dt: datetime | date) -> str:
    """`YYYY-MM-DDTHH:MM:SSZ`, the format of dates in ground-truth params."""
    if isinstance(dt, datetime):
        return dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{dt.isoformat()}T00:00:00Z"


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime
    params: dict[str, Any]  # the ground-truth params describing it (without today_date)
    phrase: str  # how the query names it ("in Q3 2022", "over the past 3 months")


# Windows are pure functions of their arguments and thousands of draws ask for the same few hundred, so they
# are made once each (the Window is shared: callers copy its params, never change them).
@lru_cache(maxsize=65536)
def relative_window(today: date, period: str, count: int) -> Window:
    end = datetime(today.year, today.month, today.day)
    delta = {
        "day": {"days": count},
        "week": {"weeks": count},
        "month": {"months": count},
        "quarter": {"months": 3 * count},
        "year": {"months": 12 * count},
    }[period]
    start = end - relativedelta(**delta)
    words = {1: "", 2: "two ", 3: "three ", 4: "four ", 5: "five ", 6: "six "}
    if count == 1:
        phrase = {"day": "in the past day", "week": "over the past week", "month": "over the past month",
                  "quarter": "over the past quarter", "year": "over the past year"}[period]  # fmt: skip
    else:
        number = words.get(count, f"{count} ") if period != "day" else f"{count} "
        phrase = f"over the past {number}{period}s"
    # params are arguments of CRMArena's get_start_date, which has no 'year': a year is 12 months
    unit, units = ("month", 12 * count) if period == "year" else (period, count)
    return Window(start, end, {"end_date": iso(end), "period": unit, "interval_count": units}, phrase)


@lru_cache(maxsize=4096)
def named_window(name: str, year: int) -> Window:
    if name in MONTHS:
        m = MONTHS.index(name) + 1
        start = datetime(year, m, 1)
        return Window(
            start, start + relativedelta(months=1), {"period_name": name, "year": year}, f"in {name} {year}"
        )
    if name in ("Q1", "Q2", "Q3", "Q4"):
        start = datetime(year, 3 * int(name[1]) - 2, 1)
        return Window(
            start, start + relativedelta(months=3), {"period_name": name, "year": year}, f"in {name} {year}"
        )
    if name in SEASON_START:
        start = datetime(year, SEASON_START[name], 1)
        return Window(
            start, start + relativedelta(months=3), {"period_name": name, "year": year}, f"in {name} {year}"
        )
    raise ValueError(f"unknown period name {name!r}")


def window_from_params(params: dict[str, Any]) -> Window:
    if "period_name" in params:
        return named_window(params["period_name"], int(params["year"]))
    return relative_window(_day(params["end_date"]), params["period"], int(params["interval_count"]))


@lru_cache(maxsize=65536)
def _day(stamp: str) -> date:
    """The date of a `YYYY-MM-DDTHH:MM:SSZ` param."""
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").date()


def asked_from(params: dict[str, Any]) -> date | None:
    """The earliest day an instance asks about: its period's start (relative or named), or for NED the
    purchase date (today − N days/weeks/months); None for tasks without a date (routing, PVI, knowledge)."""
    if "period_name" in params or "end_date" in params:
        return window_from_params(params).start.date()
    if {"today_date", "period", "interval_count"} <= params.keys():
        today = _day(params["today_date"])
        unit = {"day": "days", "week": "weeks", "month": "months"}.get(str(params["period"]))
        if unit is not None:
            return today - relativedelta(**{unit: int(params["interval_count"])})
    return None


def within_span(sample: Callable[[random.Random, bool], Instance | None], first: date) -> Any:
    """`sample`, refusing any instance that asks about a day before the data starts (issue 16 item 5: such an
    instance's answer would be None only because the org has no data yet, which an agent could guess)."""

    def guarded(rng: random.Random, want_none: bool) -> Instance | None:
        inst = sample(rng, want_none)
        if inst is None:
            return None
        earliest = asked_from(inst.params)
        return None if earliest is not None and earliest < first else inst

    return guarded


@dataclass
class Solution:
    """A solver's answer with the per-candidate values behind it and the winner's margin."""

    answer: str | None
    candidates: dict[str, Any] | list[str]
    margin: float | None = None
    tie: bool = False
    tied: list[str] = field(default_factory=list)  # the candidates sharing the best value, when tie


@dataclass
class Instance:
    task: str
    query: str
    answer: str | None
    required: str
    params: dict[str, Any]
    solution: Solution
    context: dict[str, Any] = field(default_factory=dict)
    tail: str = ""  # appended verbatim after the (possibly paraphrased) question: the answer-format suffix

    @property
    def full_query(self) -> str:
        return f"{self.query}{self.tail}"


def pick_extreme(values: dict[str, float], mode: str) -> Solution:
    """argmin/argmax with ties detected and the margin to the runner-up recorded."""
    if not values:
        return Solution(None, {})
    ordered = sorted(values.items(), key=lambda kv: (kv[1], kv[0]), reverse=(mode == "max"))
    best = ordered[0]
    if len(ordered) == 1:
        return Solution(best[0], dict(values), None)
    runner = ordered[1]
    margin = abs(best[1] - runner[1])
    tied = sorted(k for k, v in values.items() if math.isclose(v, best[1], abs_tol=1e-9))
    return Solution(
        best[0], dict(values), round(margin, 6), tie=len(tied) > 1, tied=tied if len(tied) > 1 else []
    )


# The columns the builders read of the large objects (the others are read whole): a builder reading another
# column of these fails with a KeyError naming it; add it here.
READ_COLUMNS: dict[str, tuple[str, ...]] = {
    "Account": ("Id", "ShippingState"),
    "Contact": ("Id", "AccountId", "FirstName"),
    "Case": (
        "Id",
        "Status",
        "OwnerId",
        "AccountId",
        "CreatedDate",
        "ClosedDate",
        "OrderItemId__c",
        "IssueId__c",
    ),
    "CaseHistory__c": ("CaseId__c", "Field__c", "OldValue__c", "NewValue__c", "CreatedDate"),
    "Order": ("Id", "AccountId", "Status", "EffectiveDate"),
    "OrderItem": ("Id", "OrderId", "Product2Id"),
    "EmailMessage": ("Id", "ParentId", "TextBody", "Incoming", "MessageDate"),
    "LiveChatTranscript": ("Id", "CaseId", "OwnerId", "Body", "StartTime"),
}

LATENT_CASE_COLUMNS = ("Id", "_violation", "_offer_channel")  # latent/Case.csv: what the task samplers read
READ_ROWS = 16_384  # rows of a large object read and typed at a time


def _values(
    known: np.ndarray, codes: np.ndarray, as_read: dict[int, Any], rows: np.ndarray | None = None
) -> np.ndarray:
    """`known[codes]` as an object array, where a code of -1 takes the value read at that row (`as_read`, by
    row of the table; `rows` the rows of `codes` when they are not 0, 1, ...)."""
    out = known[codes] if len(known) else np.empty(len(codes), dtype=object)
    missing = np.flatnonzero(codes < 0)
    if len(missing):
        where = missing if rows is None else rows[missing]
        out[missing] = [as_read[int(r)] for r in where.tolist()]
    return out


class OrgData:
    """The bundle's records as typed frames (read on first use), with the joins every builder needs."""

    def __init__(self, root: Path, model: OrgModel | None = None) -> None:
        self.root = Path(root)
        self.model = model or load_model()
        self.bundle = Bundle(root)
        self.manifest = self.bundle.read_manifest()
        self.cache: dict[str, Any] = {}

    @property
    def style(self) -> str:
        """The profile's `[tasks] style` the bundle was built with (bundles from before it: "explicit")."""
        return str((self.manifest.get("profile") or {}).get("task_style", "explicit"))

    def customer_words(self) -> dict[str, list[str]]:
        """Product type → the words customers use for it (`aka` in the bundle's profile; {} when unreadable)."""
        from schemas.errors import OrgseedError
        from schemas.profile import load_profile

        path = (self.manifest.get("profile") or {}).get("path")
        try:
            profile = load_profile(str(path), self.model) if path else None
        except (OrgseedError, OSError):
            profile = None
        if profile is None:
            return {}
        return {
            noun: list(t.get("aka", []))
            for cat in profile.latent["categories"].values()
            for noun, t in cat.get("types", {}).items()
        }

    def frame(self, name: str) -> pd.DataFrame:
        """`name`'s records, typed; of the large objects only the columns the builders use (READ_COLUMNS)."""
        key = f"frame:{name}"
        if key not in self.cache:
            spec = self.model.get(name)
            if name in READ_COLUMNS:
                self.cache[key] = self.read_typed(name, READ_COLUMNS[name])
            else:
                self.cache[key] = type_frame(spec, self.bundle.read_raw(name, spec))
        return self.cache[key]

    def read_typed(
        self,
        name: str,
        columns: tuple[str, ...],
        keep: Callable[[pd.DataFrame], pd.Series | np.ndarray] | None = None,
        each: Callable[[pd.DataFrame], None] | None = None,
        share: bool = True,
    ) -> pd.DataFrame:
        """`columns` of `name`, typed, in record order; with `keep`, only the rows it marks (a boolean Series
        over a typed block). Read and typed a block of READ_ROWS at a time: the untyped strings of a whole
        large object and their typed copy are never held side by side (that high-water mark stayed in the
        process after the read), and rows `keep` drops are never held at all. `each`, when given, sees every
        typed block, before `keep`: a caller's other use of the same read. `share`: equal cells of a column
        that repeats are one string object (`Bundle.iter_columns`); a caller that keeps nothing of the read
        passes False, since the table of a column's values would be held for nothing."""
        spec = self.model.get(name)
        parts = []

        def add(part: pd.DataFrame) -> None:
            if each is not None:
                each(part)
            parts.append(part if keep is None else part[keep(part)])

        for raw in self.bundle.iter_columns(name, columns, rows=READ_ROWS, share=share):
            add(type_frame(spec, raw))
        if not parts:
            add(type_frame(spec, self.bundle.read_columns(name, columns)))
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)

    @cached_property
    def cases(self) -> pd.DataFrame:
        c = self.frame("Case")
        item_product = self.by_id("case_items")["Product2Id"] if self.bundle.has_data("OrderItem") else {}
        state = self.accounts.set_index("Id")["ShippingState"] if self.bundle.has_data("Account") else {}
        return c.assign(_product=c["OrderItemId__c"].map(item_product), _state=c["AccountId"].map(state))

    @cached_property
    def assignments(self) -> pd.DataFrame:
        """The Owner Assignment rows of CaseHistory__c, in record order: read a block at a time keeping only
        those, so the rest of the table is never held (at scale 100, 67 of its 74 MB)."""
        rows = self.read_typed(
            "CaseHistory__c",
            READ_COLUMNS["CaseHistory__c"],
            keep=lambda part: part["Field__c"] == "Owner Assignment",
        )
        rows["CaseId__c"] = pd.Series(self.as_case_ids(rows["CaseId__c"]), index=rows.index, dtype=object)
        return rows

    def as_case_ids(self, values: pd.Series | pd.Index) -> np.ndarray:
        """`values` as an object array whose cells that are case ids are the Case frame's own strings (the
        others as they are): a frame that names the cases again (the owner assignments, the latent cases)
        then holds no second copy of their ids (at scale 1,000, ~70 MB each). The same values."""
        known = self.by_id("cases").index
        if not known.is_unique:  # (an org with a case id twice: nothing is shared)
            return np.asarray(values, dtype=object)
        at = known.get_indexer(values)
        out = np.asarray(values, dtype=object).copy()
        found = np.flatnonzero(at >= 0)
        out[found] = np.asarray(known, dtype=object)[at[found]]
        return out

    # the columns the builders read of the closed and the open cases: taking rows copies the columns taken
    # (at scale 1,000, ~950,000 closed cases: 8 bytes a cell), where the whole frame's are shared
    CASE_SUBSET_COLUMNS = ("Id", "OwnerId", "IssueId__c", "_product")

    @cached_property
    def closed_cases(self) -> pd.DataFrame:
        """The Closed cases, in record order, with CASE_SUBSET_COLUMNS."""
        c = self.cases
        return c.loc[c["Status"] == "Closed", list(self.CASE_SUBSET_COLUMNS)]

    @cached_property
    def open_cases(self) -> pd.DataFrame:
        """Cases whose Status is not Closed (including those without a Status), with CASE_SUBSET_COLUMNS."""
        c = self.cases
        return c.loc[c["Status"] != "Closed", list(self.CASE_SUBSET_COLUMNS)]

    # every order item (the whole table: no builder reads it; tests and callers asking about any item do)
    items = cached_property(lambda self: self.frame("OrderItem"))

    @property
    def case_items(self) -> pd.DataFrame:
        """The order items a case is about (what the builders ask of single items: a case's product, its
        order), in record order: at scale 300, 293,100 of 2,130,000 items."""
        return self._order_items[0]

    def item_links(self) -> tuple[np.ndarray, np.ndarray]:
        """For every order item, in record order: its order's position in `orders` (-1: no such order) and
        its Product2Id."""
        return self._order_items[1], self._order_items[2]

    @cached_property
    def _order_items(self) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
        """`case_items` and `item_links` from one read of OrderItem, a block at a time: the table itself, the
        builders' largest (~270 MB of strings at scale 300), is never held, and neither is any string a block
        read. What is kept refers to the strings of the frames already held (a case's item id, an order's
        id, a product's id): a few strings of each block kept alive held most of the memory the blocks had
        used (scale 300: +336 MB of RSS for ~90 MB kept). A value that is not one of those (an order or a
        product the org lacks) is kept as read."""
        # an Index of the distinct ids: its hash table is built once, not once per block as `isin` builds it
        wanted = pd.Index(pd.unique(self.frame("Case")["OrderItemId__c"].dropna()))
        orders = self.by_id("orders").index
        catalogue = (
            pd.Index(pd.unique(self.products["Id"].dropna()))
            if self.bundle.has_data("Product2")
            else pd.Index([])
        )
        positions: list[np.ndarray] = []
        codes: list[np.ndarray] = []
        picked: list[np.ndarray] = []  # per case item: its number in `wanted`
        at: list[np.ndarray] = []  # per case item: its row in the table
        as_read: dict[str, dict[int, Any]] = {"OrderId": {}, "Product2Id": {}}  # row -> a value kept as read
        dtypes: dict[str, Any] = {}
        seen = 0

        def links(part: pd.DataFrame) -> None:
            nonlocal seen
            dtypes.update(part.dtypes.to_dict())
            order = orders.get_indexer(part["OrderId"])
            product = catalogue.get_indexer(part["Product2Id"])
            positions.append(order)
            codes.append(product)
            hit = wanted.get_indexer(part["Id"])
            rows = np.flatnonzero(hit >= 0)
            picked.append(hit[rows])
            at.append(seen + rows)
            for r in np.flatnonzero(product < 0).tolist():
                as_read["Product2Id"][seen + r] = part["Product2Id"].iat[r]
            for r in rows[order[rows] < 0].tolist():
                as_read["OrderId"][seen + r] = part["OrderId"].iat[r]
            seen += len(part)

        self.read_typed(
            "OrderItem",
            READ_COLUMNS["OrderItem"],
            keep=lambda part: np.zeros(len(part), dtype=bool),
            each=links,
            share=False,
        )
        order = np.concatenate(positions)
        products = _values(np.asarray(catalogue, dtype=object), np.concatenate(codes), as_read["Product2Id"])
        rows = np.concatenate(at)
        items = {
            "Id": np.asarray(wanted, dtype=object)[np.concatenate(picked)],
            "OrderId": _values(np.asarray(orders, dtype=object), order[rows], as_read["OrderId"], rows),
            "Product2Id": products[rows],
        }
        frame = pd.DataFrame({c: pd.Series(v, dtype=dtypes[c]) for c, v in items.items()})
        return frame, order, products

    orders = cached_property(lambda self: self.frame("Order"))
    products = cached_property(lambda self: self.frame("Product2"))
    accounts = cached_property(lambda self: self.frame("Account"))
    contacts = cached_property(lambda self: self.frame("Contact"))
    users = cached_property(lambda self: self.frame("User"))
    issues = cached_property(lambda self: self.frame("Issue__c"))
    knowledge = cached_property(lambda self: self.frame("Knowledge__kav"))
    emails = cached_property(lambda self: self.frame("EmailMessage"))
    chats = cached_property(lambda self: self.frame("LiveChatTranscript"))

    @cached_property
    def latent_cases(self) -> pd.DataFrame:
        """latent/Case.csv, only what the samplers read (the whole table is ~25 columns), indexed by Id."""
        frame = self.bundle.read_latent("Case", LATENT_CASE_COLUMNS)
        frame["Id"] = pd.Series(self.as_case_ids(frame["Id"]), index=frame.index, dtype=frame["Id"].dtype)
        return frame.set_index("Id")

    latent_knowledge = cached_property(lambda self: self.bundle.read_latent("Knowledge__kav").set_index("Id"))
    latent_issues = cached_property(lambda self: self.bundle.read_latent("Issue__c").set_index("Id"))

    @cached_property
    def policies(self) -> dict[str, Any]:
        return dict(json.loads((self.root / "latent" / "world" / "policies.json").read_text()))

    @cached_property
    def span_start(self) -> pd.Timestamp:
        prof = self.manifest.get("profile", {})
        return pd.Timestamp(prof.get("start") or self.frame("Case")["CreatedDate"].min()).normalize()

    @cached_property
    def span_end(self) -> pd.Timestamp:
        prof = self.manifest.get("profile", {})
        return pd.Timestamp(prof.get("end") or self.frame("Case")["CreatedDate"].max()).normalize()

    # -- indexed access: the builders sample thousands of instances, each asking about a few rows ---------

    def by_id(self, name: str) -> pd.DataFrame:
        """`name` (an attribute: "cases", "case_items", "orders", "users") indexed by Id, built once."""
        key = f"by_id:{name}"
        if key not in self.cache:
            self.cache[key] = getattr(self, name).set_index("Id")
        return self.cache[key]

    def positions_with(self, name: str, column: str, value: Any) -> np.ndarray:
        """The positions of the rows of `name` whose `column` equals `value`, in the frame's order (the rows
        of `f[f[column] == value]`; the positions per value are grouped once)."""
        key = f"groups:{name}:{column}"
        if key not in self.cache:
            self.cache[key] = getattr(self, name).groupby(column, sort=False).indices
        positions = self.cache[key].get(value)
        return positions if positions is not None else np.empty(0, dtype=np.intp)

    def created_between(self, name: str, start: datetime, end: datetime, end_included: bool) -> pd.DataFrame:
        """The rows of `name` whose CreatedDate is in [start, end) (or [start, end]), in the frame's order: the
        same rows as the boolean mask over the whole frame, found by binary search on the sorted dates."""
        frame: pd.DataFrame = getattr(self, name)
        return frame.iloc[self.created_positions(name, start, end, end_included)]

    def created_positions(
        self, name: str, start: datetime, end: datetime, end_included: bool, in_order: bool = True
    ) -> np.ndarray:
        """The positions (in frame order; without `in_order`, in CreatedDate order, for a caller that only
        counts them) of the rows `created_between` returns."""
        key = f"created_order:{name}"
        if key not in self.cache:
            frame: pd.DataFrame = getattr(self, name)
            stamps = frame["CreatedDate"].to_numpy(dtype="datetime64[ns]")
            known = np.flatnonzero(~np.isnat(stamps))  # NaT is in no window
            order = known[np.argsort(stamps[known], kind="stable")]
            self.cache[key] = (order, stamps[order])
        order, sorted_stamps = self.cache[key]
        lo = np.searchsorted(sorted_stamps, np.datetime64(start, "ns"), side="left")
        hi = np.searchsorted(
            sorted_stamps, np.datetime64(end, "ns"), side="right" if end_included else "left"
        )
        return np.sort(order[lo:hi]) if in_order else order[lo:hi]

    def issue_key(self, issue_id: str) -> str:
        if "issue_keys" not in self.cache:
            self.cache["issue_keys"] = self.latent_issues["_issue_key"].to_dict()
        return str(self.cache["issue_keys"][issue_id])

    def policy_article(self, issue_key: str) -> str:
        """The first knowledge article stating the policy of issue `issue_key`."""
        if "policy_articles" not in self.cache:
            lk = self.latent_knowledge
            policies = lk[lk["_kind"] == "issue_policy"]
            first: dict[Any, str] = {}
            for article, subject in zip(policies.index, policies["_subject"], strict=True):
                first.setdefault(subject, str(article))
            self.cache["policy_articles"] = first
        hit = self.cache["policy_articles"].get(issue_key)
        if hit is None:
            raise TaskBuildError(f"No knowledge article states the policy of issue `{issue_key}`.")
        return hit


Sampler = Callable[[random.Random, bool], Instance | None]


def stall_window(n: int) -> int:
    """Draws in a row without an accepted instance after which a partial fill gives up."""
    return max(2000, 20 * n)


def fill(
    task: str,
    n: int,
    none_share: float,
    rng: random.Random,
    sample: Sampler,
    max_answer_share: float = 0.3,
    max_attempts: int = 20000,
    partial: bool = False,
) -> list[Instance]:
    """Draw instances until `n` are accepted: exactly round(n × none_share) with answer None, no ties, no repeated
    (task, params), and no non-None answer on more than max_answer_share of the instances.

    `sample(rng, want_none)` tries to build one instance of the wanted kind and returns None when the draw
    does not qualify (the sampler then draws again). After `max_attempts` draws it raises TaskBuildError, or
    with `partial` returns the instances accepted so far (fewer than `n`); a partial fill also stops once
    `stall_window(n)` draws in a row were all rejected (the org is exhausted; drawing on only costs time).
    """
    want_none = round(n * none_share)
    cap = max(1, math.floor(max_answer_share * n))
    out: list[Instance] = []
    seen: set[str] = set()
    answers: Counter[str] = Counter()
    nones = 0
    attempts = 0
    last_accepted = 0
    while len(out) < n:
        attempts += 1
        if attempts > max_attempts or (partial and attempts - last_accepted > stall_window(n)):
            if partial:
                return out
            raise TaskBuildError(
                f"{task}: only {len(out)} of {n} instances after {max_attempts} draws ({nones} None). The org is "
                "too small or too uniform for this task; lower --per-task or raise the profile's counts."
            )
        need_none = nones < want_none and (len(out) - nones >= n - want_none or rng.random() < none_share)
        inst = sample(rng, need_none)
        if inst is None or inst.solution.tie:
            continue
        is_none = inst.answer is None
        if is_none != need_none:
            continue
        key = json.dumps(inst.params, sort_keys=True)
        if key in seen:
            continue
        if not is_none and answers[str(inst.answer)] >= cap:
            continue
        seen.add(key)
        last_accepted = attempts
        if is_none:
            nones += 1
        else:
            answers[str(inst.answer)] += 1
        out.append(inst)
    return out


def random_window(
    data: OrgData,
    rng: random.Random,
    named_share: float = 0.5,
    relative_units: tuple[tuple[str, int, int], ...] = (("week", 2, 12), ("month", 1, 12), ("quarter", 1, 4)),
    kinds: tuple[str, ...] = ("month", "quarter", "season"),
) -> tuple[date, Window]:
    """A window and the `today` it is asked on: a named period that has ended by today, or a relative one."""
    first, last = data.span_start.date(), data.span_end.date()
    if rng.random() < named_share:
        kind = rng.choice(kinds)
        year = rng.randint(first.year - (1 if rng.random() < 0.15 else 0), last.year)
        name = {"month": rng.choice(MONTHS), "quarter": rng.choice(["Q1", "Q2", "Q3", "Q4"]),
                "season": rng.choice(["Spring", "Summer", "Fall", "Winter"])}[kind]  # fmt: skip
        w = named_window(name, year)
        today = w.end.date() + timedelta(days=rng.randint(0, 420))
        return today, w
    unit, lo, hi = rng.choice(relative_units)
    today = first + timedelta(days=rng.randint(45, (last - first).days + 200))
    return today, relative_window(today, unit, rng.randint(lo, hi))


def today_line(today: date) -> str:
    return f"## Today's date: {today.isoformat()}"


# -- Shared by handle_time and transfer_count (HTU, TCU) -------------------------------------------------

SUFFIX_AGENT = "Return only the Id of the agent (a User Id), or None if no agent qualifies."


@dataclass(frozen=True)
class AssignmentCodes:
    """The Owner Assignment rows as integer codes, for the agent tasks' thousands of windows (HTU, TCU):
    the agents (NewValue__c) numbered, each row's new owner, previous owner and case as codes (-1: empty, or
    for the previous owner and the cases' owners an id no row assigns to), and each case's code in the rows'
    numbering of CaseId__c (-1: never assigned)."""

    new_owner: np.ndarray  # per assignment row: code of NewValue__c
    old_owner: np.ndarray  # per assignment row: code of OldValue__c in the same numbering
    case: np.ndarray  # per assignment row: code of CaseId__c
    agents: int
    cases: int
    case_of_case: np.ndarray  # per Case row: its Id's code in the CaseId__c numbering
    owner_of_case: np.ndarray  # per Case row: its OwnerId's code in the NewValue__c numbering
    closed: np.ndarray  # per Case row: Status == "Closed"
    handle_columns: (
        pd.DataFrame
    )  # the Case columns HTU reads (a narrow frame: a window's rows are cheap to take)
    old_values: pd.Series  # OldValue__c of the assignment rows, the one column TCU reads
    agent_ids: list[str]  # per agent code: the agent's Id; the codes number the Ids in sorted order
    minutes: np.ndarray  # per Case row: ClosedDate − CreatedDate in minutes (NaN when either is empty)


def assignment_codes(data: OrgData) -> AssignmentCodes:
    if "assignment_codes" not in data.cache:
        rows, cases = data.assignments, data.cases
        new_owner, agents = pd.factorize(rows["NewValue__c"], sort=True)
        case, case_ids = pd.factorize(rows["CaseId__c"])
        agent_index, case_index = pd.Index(agents), pd.Index(case_ids)
        data.cache["assignment_codes"] = AssignmentCodes(
            new_owner=np.asarray(new_owner),
            old_owner=agent_index.get_indexer(rows["OldValue__c"]),
            case=np.asarray(case),
            agents=len(agents),
            cases=len(case_ids),
            case_of_case=case_index.get_indexer(cases["Id"]),
            owner_of_case=agent_index.get_indexer(cases["OwnerId"]),
            closed=(cases["Status"] == "Closed").to_numpy(dtype=bool),
            handle_columns=cases[["OwnerId", "CreatedDate", "ClosedDate"]],
            old_values=rows["OldValue__c"],
            agent_ids=[str(a) for a in agents],
            minutes=((cases["ClosedDate"] - cases["CreatedDate"]).dt.total_seconds() / 60.0).to_numpy(
                dtype="float64"
            ),
        )
    return data.cache["assignment_codes"]


def _counts(codes: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(codes[codes >= 0], minlength=size)


def qualified_mask(codes: AssignmentCodes, positions: np.ndarray, n_cases: int) -> np.ndarray:
    """Per agent code: whether the agent is qualified by the assignment rows at `positions` (the window's):
    more than `n_cases` rows name them as the new owner (NewValue__c)."""
    return _counts(codes.new_owner[positions], codes.agents) > n_cases


def _member(codes: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Per code: whether it is >= 0 and `allowed` there (`isin` over codes)."""
    return (codes >= 0) & allowed[np.maximum(codes, 0)]


def handle_time_cases(data: OrgData, w: Window, n_cases: int) -> pd.DataFrame:
    """The cases HTU averages (handle_time.py), in frame order: created in [start, end), Closed, owned by a
    qualified agent, with exactly one Owner Assignment row in [start, end]. The same rows as the masks over
    the frames, by counting codes; only the columns HTU reads (OwnerId, CreatedDate, ClosedDate)."""
    return assignment_codes(data).handle_columns.iloc[handle_time_positions(data, w, n_cases)]


def handle_time_positions(data: OrgData, w: Window, n_cases: int) -> np.ndarray:
    """The positions (in Case frame order) of the rows `handle_time_cases` returns."""
    codes = assignment_codes(data)
    rows = data.created_positions("assignments", w.start, w.end, end_included=True, in_order=False)
    qualified = qualified_mask(codes, rows, n_cases)
    single = _counts(codes.case[rows], codes.cases) == 1
    c = data.created_positions("cases", w.start, w.end, end_included=False)
    keep = (
        _member(codes.owner_of_case[c], qualified) & _member(codes.case_of_case[c], single) & codes.closed[c]
    )
    return c[keep]


def transfer_counts(data: OrgData, w: Window, n_cases: int) -> dict[str, float]:
    """TCU's count of moves per previous owner, as `transfers_from(...).value_counts()` orders them (count
    descending, ties in order of first appearance), counted on the agent codes."""
    codes = assignment_codes(data)
    rows = data.created_positions("assignments", w.start, w.end, end_included=True)
    moved = _moved(codes, rows, n_cases)
    if not len(moved):
        return {}
    agents, first, counts = np.unique(moved, return_index=True, return_counts=True)
    order = np.lexsort((first, -counts))
    return {codes.agent_ids[agents[k]]: float(counts[k]) for k in order}


def transfer_tally(data: OrgData, w: Window, n_cases: int) -> np.ndarray:
    """The values of `transfer_counts`, unordered: the moves of each previous owner with any, as integers."""
    codes = assignment_codes(data)
    rows = data.created_positions("assignments", w.start, w.end, end_included=True, in_order=False)
    counts = _counts(_moved(codes, rows, n_cases), codes.agents)
    return counts[counts > 0]


def _moved(codes: AssignmentCodes, rows: np.ndarray, n_cases: int) -> np.ndarray:
    """The previous owners' agent codes of the assignment rows at `rows` that TCU counts: those whose
    previous owner is qualified by `rows`."""
    qualified = qualified_mask(codes, rows, n_cases)
    return codes.old_owner[rows[_member(codes.old_owner[rows], qualified)]]


def transfers_from(data: OrgData, w: Window, n_cases: int) -> pd.Series:
    """TCU's moves (transfer_count.py), in frame order: OldValue__c of the Owner Assignment rows in
    [start, end] whose previous owner is a qualified agent."""
    codes = assignment_codes(data)
    rows = data.created_positions("assignments", w.start, w.end, end_included=True)
    qualified = qualified_mask(codes, rows, n_cases)
    return codes.old_values.iloc[rows[_member(codes.old_owner[rows], qualified)]]


def cases_clause(n: int) -> str:
    if n == 0:
        return "among agents who handled any cases"
    return f"among agents who handled more than {n} case{'s' if n > 1 else ''}"


def agent_task_params(today: date, w: Window, n: int, extrema: str) -> dict[str, Any]:
    return {"extrema": extrema, "n_cases": n, "today_date": iso(today), **w.params}


# -- Shared by top_issue_identification and monthly_trend_analysis (TII, MTA) ----------------------------


def product_positions(data: OrgData) -> dict[str, np.ndarray]:
    """Product Id -> the positions of its cases in the Case frame, in frame order (the rows of
    `cases.groupby("_product")`'s group; a product without a case has none)."""
    if "product_positions" not in data.cache:
        data.cache["product_positions"] = data.cases.groupby("_product").indices
    return data.cache["product_positions"]


def sampled_created(created: np.ndarray, seed: int, draws: np.random.RandomState) -> datetime:
    """The CreatedDate of `cases.sample(1, random_state=seed)`'s row, from `created`, the cases' CreatedDate
    values (datetime64), without building that frame: pandas draws its position with
    `RandomState(seed).choice(len(cases), size=1, replace=False)`. `draws`, reseeded, makes the same draws as
    that new RandomState (which first seeds itself from the OS, at ten times the cost)."""
    draws.seed(seed)
    at = draws.choice(len(created), size=1, replace=False)[0]
    return pd.Timestamp(created[at]).to_pydatetime()


def product_name(data: OrgData, product_id: str) -> str:
    if "product_names" not in data.cache:
        data.cache["product_names"] = dict(zip(data.products["Id"], data.products["Name"], strict=True))
    return str(data.cache["product_names"][product_id])


def case_products(data: OrgData) -> tuple[list[str], list[float]]:
    if "case_products" not in data.cache:
        counts = data.cases["_product"].value_counts()
        data.cache["case_products"] = (list(counts.index), [float(x) for x in counts.to_numpy()])
    return data.cache["case_products"]
