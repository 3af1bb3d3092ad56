"""An independent derivation of the nine CRMArena task answers from a bundle's data.

This module is the *second* derivation of every task answer: it is written from the task specification
(`reference/crmarena.md` §6–7 and orgseed's stated choices), never from the task builders, so that a bug in
one derivation shows up as a disagreement with the other. `validators/tasks.py` uses it to check the task
files a build writes; the hand-made fixtures in `tests/fixtures/tasks/` pin its semantics.

Entry points:
- `TaskData.load(root)` reads and indexes a bundle (or a partial one: only the files and columns a task
  needs) once;
- `solve(data, task, params) -> Solution` recomputes one instance from its `params` (the names of
  `ground_truth.jsonl`), with the candidate table behind the answer, the margin, and any tie or ambiguity;
- `solve_instance(root, task, params)` is the same for one-off use (it caches the loaded data per folder).

Windows: relative `start = end - interval_count x unit` with calendar arithmetic (dateutil); named periods
are months, quarters and seasons of the given year (Winter 2021 = 2021-12-01 .. 2022-03-01), not clipped to
today. Which end is inclusive depends on the task, as in CRMArena's reference solvers.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from dateutil.relativedelta import relativedelta

from orgs.bundle import Bundle, type_frame
from schemas.errors import DataFindings
from schemas.model import load_model
from schemas.taskspec import MONTHS, task_names
from validators import fidelity

SEASON_START: dict[str, int] = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
PARAM_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
OWNER_ASSIGNMENT = "Owner Assignment"
CLOSED = "Closed"
# Two averages closer than this are a tie (means of whole seconds differ by far more when they differ).
TIE_TOLERANCE = 1e-9

# The columns each object contributes; a partial bundle may lack any of them (they read as empty).
COLUMNS: dict[str, tuple[str, ...]] = {
    "User": ("Id", "FirstName", "LastName"),
    "Account": ("Id", "ShippingState"),
    "Contact": ("Id", "AccountId"),
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
    "Knowledge__kav": ("Id", "FAQ_Answer__c"),
    "Product2": ("Id", "Name", "Description", "ProductCode", "Family"),
    "Order": ("Id", "AccountId", "Status", "EffectiveDate"),
    "OrderItem": ("Id", "OrderId", "Product2Id"),
    "EmailMessage": ("Id", "ParentId", "TextBody", "Incoming", "MessageDate"),
    "LiveChatTranscript": ("Id", "CaseId", "OwnerId", "Body", "StartTime"),
    "CaseHistory__c": ("Id", "CaseId__c", "Field__c", "OldValue__c", "NewValue__c", "CreatedDate"),
}


class ParamError(DataFindings):
    """An instance's params cannot be interpreted (unknown period, bad date, missing key)."""


class DerivationError(DataFindings):
    """The data does not allow an answer to be derived (article or case missing, unknown question)."""


@dataclass(frozen=True)
class Solution:
    """One re-derived answer.

    `answer` is None both for a genuine None answer and when no single answer exists; `tied` then lists
    the tied winners (a tie the builder must never emit), `ambiguous` the several answers found where one
    was expected (NED: several products bought that day; KQA: several facts with that question), and
    `problem` says why nothing could be derived (missing article, unknown question, ...).
    """

    answer: str | None
    candidates: dict[str, float] | list[str] | None = None
    margin: float | None = None
    tied: tuple[str, ...] = ()
    ambiguous: tuple[str, ...] = ()
    problem: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        if self.problem is not None:
            return "problem"
        if self.tied:
            return "tie"
        if self.ambiguous:
            return "ambiguous"
        return "answer"


# -- windows -------------------------------------------------------------------------------------------


def parse_param_datetime(value: Any, key: str) -> datetime:
    """A params date-time `YYYY-MM-DDTHH:MM:SSZ` as a naive UTC datetime."""
    if not isinstance(value, str) or not PARAM_DATETIME_RE.match(value):
        raise ParamError(f"params.{key} must be a UTC date-time `YYYY-MM-DDTHH:MM:SSZ`, got {value!r}.")
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError as exc:
        raise ParamError(f"params.{key} is not a real date-time: {value!r} ({exc}).") from exc


def _int_param(params: Mapping[str, Any], key: str) -> int:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError(f"params.{key} must be an integer, got {value!r}.")
    return value


def period_delta(period: str, count: int) -> relativedelta:
    """`count` calendar units of `period` (day, week = 7 days, month, quarter = 3 months): the units of
    CRMArena's get_start_date, which refuses 'year' (a year is written as 12 months)."""
    unit = period.lower()
    if unit == "day":
        return relativedelta(days=count)
    if unit == "week":
        return relativedelta(days=7 * count)
    if unit == "month":
        return relativedelta(months=count)
    if unit == "quarter":
        return relativedelta(months=3 * count)
    if unit == "year":
        raise ParamError(
            "period 'year' is not an argument CRMArena's get_start_date accepts; write a year as "
            "period 'month' with interval_count 12 (rebuild the task files with `orgseed tasks`)."
        )
    raise ParamError(f"Unknown period {period!r}; expected day, week, month or quarter.")


def named_window(name: str, year: int) -> tuple[datetime, datetime]:
    """[start, end) of a month name, Q1..Q4 or season of `year` (Winter starts in December of `year`)."""
    key = name.strip().lower()
    months_lower = [m.lower() for m in MONTHS]
    if key in months_lower:
        start = datetime(year, months_lower.index(key) + 1, 1)
        return start, start + relativedelta(months=1)
    if re.fullmatch(r"q[1-4]", key):
        start = datetime(year, 3 * int(key[1]) - 2, 1)
        return start, start + relativedelta(months=3)
    if key in SEASON_START:
        start = datetime(year, SEASON_START[key], 1)
        return start, start + relativedelta(months=3)
    raise ParamError(
        f"Unknown period_name {name!r}; expected a month name, Q1..Q4, Spring, Summer, Fall, Autumn or Winter."
    )


def window(params: Mapping[str, Any]) -> tuple[datetime, datetime]:
    """The (start, end) of an instance's time window, relative (`end_date`) or named (`period_name`)."""
    has_named = "period_name" in params or "year" in params
    has_relative = "end_date" in params or "interval_count" in params
    if has_named and has_relative:
        raise ParamError("params mix a named window (period_name/year) with a relative one (end_date/...).")
    if has_named:
        name = params.get("period_name")
        if not isinstance(name, str):
            raise ParamError(f"params.period_name must be a string, got {name!r}.")
        return named_window(name, _int_param(params, "year"))
    end = parse_param_datetime(params.get("end_date"), "end_date")
    period = params.get("period")
    if not isinstance(period, str):
        raise ParamError(f"params.period must be a string, got {period!r}.")
    return end - period_delta(period, _int_param(params, "interval_count")), end


# -- the data ------------------------------------------------------------------------------------------


def _np_time(value: datetime) -> np.datetime64:
    return np.datetime64(value, "ns")


def _times(series: pd.Series) -> np.ndarray:
    return np.asarray(series.to_numpy(dtype="datetime64[ns]"))


READ_BATCH = 16_384  # rows of an object read and typed at a time


def _read(
    bundle: Bundle,
    name: str,
    key: str | None = None,
    keep: AbstractSet[str] | None = None,
    equal: tuple[str, str] | None = None,
) -> pd.DataFrame:
    """data/<name>.csv (or its parts) with the columns this module uses, typed; empty when there is no data.
    Read and typed READ_BATCH rows at a time, so a reader never holds a whole object's untyped strings beside
    their typed copy. With `keep`, only the rows whose `key` is in it; with `equal` (column, value), only the
    rows whose column is that value (rows left out are never held)."""
    parts = list(_read_batches(bundle, name, key, keep, equal, share=keep is None))
    if not parts:
        spec = load_model().get(name)
        return type_frame(spec, pd.DataFrame({c: pd.Series([], dtype=object) for c in COLUMNS[name]}))
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)


def _read_batches(
    bundle: Bundle,
    name: str,
    key: str | None = None,
    keep: AbstractSet[str] | None = None,
    equal: tuple[str, str] | None = None,
    share: bool = False,
) -> Iterator[pd.DataFrame]:
    """`_read`'s rows, typed, READ_BATCH rows of the file at a time (nothing when there is no data). `share`:
    equal cells of a column that repeats are one string object (`Bundle.iter_columns`), for a reader that
    keeps most of what it reads."""
    spec = load_model().get(name)
    columns = list(COLUMNS[name])
    if not bundle.has_data(name):
        return
    for frame in bundle.iter_columns(name, columns, rows=READ_BATCH, share=share):
        if keep is not None and key is not None:
            frame = frame[frame[key].isin(keep)]
        if equal is not None:
            frame = frame[frame[equal[0]] == equal[1]]
        for c in columns:
            if c not in frame.columns:
                frame[c] = pd.Series([None] * len(frame), dtype=object, index=frame.index)
        yield type_frame(spec, frame[columns])


def _index_orders(
    batches: Iterator[pd.DataFrame],
    order_date: dict[str, date],
    activated_orders_on: dict[tuple[str, date], list[str]] | None,
) -> None:
    """Each order's day (`order_date`) and, unless None, which orders each account activated on a day, from
    the orders read a batch at a time (`_read_batches`)."""
    for orders in batches:
        for oid, account, status, day in zip(
            *(orders[c].tolist() for c in ("Id", "AccountId", "Status", "EffectiveDate")), strict=True
        ):
            if pd.isna(day):
                continue
            order_date[str(oid)] = day.date()
            if activated_orders_on is not None and status == "Activated" and account:
                activated_orders_on.setdefault((str(account), day.date()), []).append(str(oid))


def _read_latent(bundle: Bundle, name: str) -> pd.DataFrame | None:
    path = bundle.root / "latent" / f"{name}.csv"
    return bundle.read_latent(name) if path.exists() else None


def _words(text: Any) -> set[str]:
    if not isinstance(text, str):
        return set()
    return {w for w in re.split(r"[^0-9a-z]+", text.lower()) if w}


def _term_words(term: str) -> list[str]:
    return [w for w in re.split(r"[^0-9a-z]+", term.lower()) if w]


@dataclass
class TaskData:
    """A bundle's records indexed once for all instances."""

    root: Path
    cases: pd.DataFrame  # sorted by CreatedDate; + Product2Id, ShippingState, handle seconds
    case_created: np.ndarray
    assignments: pd.DataFrame  # Owner Assignment rows sorted by CreatedDate
    assign_created: np.ndarray
    contact_account: dict[str, str | None]
    product_words: dict[str, set[str]]
    user_names: dict[str, str]
    emails: pd.DataFrame
    chats: pd.DataFrame
    knowledge_text: dict[str, str]
    issue_keys: dict[str, str]
    articles: pd.DataFrame  # latent Knowledge__kav: Id, _kind, _subject, _facts
    policies: dict[str, Any]
    message_cases: frozenset[str] | None = field(default=None, repr=False)  # None: every case's messages
    # the accounts whose orders are indexed (`activated_orders_on`, `products_of_order`); None: every account's
    order_accounts: frozenset[str] | None = field(default=None, repr=False)
    _emails_by_case: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _chats_by_case: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    case_position: dict[str, int] = field(default_factory=dict, repr=False)
    item_order: dict[str, str] = field(default_factory=dict, repr=False)  # the cases' order items only
    order_date: dict[str, date] = field(default_factory=dict, repr=False)
    activated_orders_on: dict[tuple[str, date], list[str]] = field(default_factory=dict, repr=False)
    products_of_order: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _owner_counts: dict[tuple[str, str, str | None], pd.Series] = field(default_factory=dict, repr=False)
    _policy_articles: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def owner_counts(self, closed: bool, column: str | None = None, value: str | None = None) -> pd.Series:
        """OwnerId counts of the Closed (or not Closed) cases whose `column` is `value` (all of them when
        `column` is None), counted once per question: routing asks the same few issues and products."""
        key = ("closed" if closed else "open", column or "", value)
        if key not in self._owner_counts:
            cases = self.cases
            rows = cases[(cases["Status"] == CLOSED) if closed else (cases["Status"] != CLOSED)]
            if column is not None:
                rows = rows[rows[column] == value]
            self._owner_counts[key] = rows["OwnerId"].value_counts()
        return self._owner_counts[key]

    def policy_articles(self, issue_key: str) -> list[str]:
        """The ids, sorted, of the issue_policy articles whose `_subject` is `issue_key`, found once per issue
        (the policy-violation questions ask about a few issues, each many times)."""
        if issue_key not in self._policy_articles:
            arts = self.articles
            wanted = (arts["_kind"] == "issue_policy") & (arts["_subject"] == issue_key)
            self._policy_articles[issue_key] = sorted(arts[wanted]["Id"].astype(str))
        return self._policy_articles[issue_key]

    @classmethod
    def load(
        cls,
        root: Path | str,
        message_cases: AbstractSet[str] | None = None,
        order_contacts: AbstractSet[str] | None = None,
    ) -> TaskData:
        """The bundle's records, indexed. With `message_cases`, only those cases' emails and chats are kept
        (the policy-violation questions read the messages of the case they name, nothing else), and only
        their order items' orders and dates. With `order_contacts`, only the orders of those contacts'
        accounts are indexed (the named-entity questions ask which products the orders of the named
        contact's account hold). Asking about another case's messages or order, or another account's orders,
        is then an error, never an empty answer. At scale 1,000 the orders indexed whole were ~1.3 GB of
        dictionaries (2.1 M orders' dates, days and products) for a few hundred questions."""
        bundle = Bundle(root)
        cases = _read(bundle, "Case")
        contacts = _read(bundle, "Contact")
        contact_account = dict(zip(contacts["Id"], contacts["AccountId"], strict=True))
        accounts_asked = (
            None if order_contacts is None else frozenset(str(contact_account.get(c)) for c in order_contacts)
        )
        # the orders of the accounts asked about: read first, so that only their items' products are kept
        order_date: dict[str, date] = {}
        activated_orders_on: dict[tuple[str, date], list[str]] = {}
        if accounts_asked is not None:
            _index_orders(
                _read_batches(bundle, "Order", "AccountId", accounts_asked), order_date, activated_orders_on
            )
        orders_asked = (
            None if accounts_asked is None else {o for ids in activated_orders_on.values() for o in ids}
        )
        # The order items are read a batch at a time and not kept (2,130,000 at scale 300, ~450 MB as a frame):
        # what the tasks read of them is the product and the order of each case's item, and every order's
        # products (the named-entity questions ask which products an account's orders of a day hold).
        case_items = set(cases["OrderItemId__c"].dropna().tolist())
        dated_items = (
            case_items
            if message_cases is None
            else set(cases.loc[cases["Id"].isin(message_cases), "OrderItemId__c"].dropna().tolist())
        )
        product_of_item: dict[Any, Any] = {}
        item_order: dict[str, str] = {}
        products_of_order: dict[str, list[str]] = {}
        for items in _read_batches(bundle, "OrderItem"):
            for iid, oid, pid in zip(
                *(items[c].tolist() for c in ("Id", "OrderId", "Product2Id")), strict=True
            ):
                if iid in case_items:
                    product_of_item[iid] = pid
                    if oid and iid in dated_items:
                        item_order[str(iid)] = str(oid)
                if oid and pid and (orders_asked is None or oid in orders_asked):
                    products_of_order.setdefault(str(oid), []).append(str(pid))
            del items
        del case_items, dated_items, orders_asked
        # every order's date and day, or only those the questions ask about: the orders of the accounts asked
        # (above) and of the named cases' items
        if accounts_asked is None:  # every account's orders: every order is read
            _index_orders(_read_batches(bundle, "Order"), order_date, activated_orders_on)
        else:
            dated = {o for o in item_order.values() if o not in order_date}
            if dated:
                _index_orders(_read_batches(bundle, "Order", "Id", dated), order_date, None)
        accounts = _read(bundle, "Account")
        history = _read(bundle, "CaseHistory__c", equal=("Field__c", OWNER_ASSIGNMENT))
        state_of_account = dict(zip(accounts["Id"].tolist(), accounts["ShippingState"].tolist(), strict=True))
        cases["Product2Id"] = cases["OrderItemId__c"].map(product_of_item)
        cases["ShippingState"] = cases["AccountId"].map(state_of_account)
        cases["_handle_seconds"] = (cases["ClosedDate"] - cases["CreatedDate"]).dt.total_seconds()
        cases = cases.sort_values(["CreatedDate", "Id"], kind="stable").reset_index(drop=True)
        oa = history[history["Field__c"] == OWNER_ASSIGNMENT]
        oa = oa.sort_values(["CreatedDate", "Id"], kind="stable").reset_index(drop=True)

        products = _read(bundle, "Product2")
        product_words: dict[str, set[str]] = {}
        for row in products.itertuples(index=False):
            words: set[str] = set()
            for col in ("Name", "Description", "ProductCode", "Family"):
                words |= _words(getattr(row, col))
            product_words[str(row.Id)] = words
        users = _read(bundle, "User")
        user_names = {
            str(u.Id): f"{u.FirstName or ''} {u.LastName or ''}".strip()
            for u in users.itertuples(index=False)
        }
        knowledge = _read(bundle, "Knowledge__kav")
        issues = _read_latent(bundle, "Issue__c")
        articles = _read_latent(bundle, "Knowledge__kav")
        policies_path = bundle.root / "latent" / "world" / "policies.json"
        policies = json.loads(policies_path.read_text(encoding="utf-8")) if policies_path.exists() else {}
        emails = _read(bundle, "EmailMessage", "ParentId", message_cases)
        chats = _read(bundle, "LiveChatTranscript", "CaseId", message_cases)
        data = cls(
            root=Path(root),
            cases=cases,
            case_created=_times(cases["CreatedDate"]),
            assignments=oa,
            assign_created=_times(oa["CreatedDate"]),
            contact_account=contact_account,
            product_words=product_words,
            user_names=user_names,
            emails=emails,
            chats=chats,
            knowledge_text={
                str(k): str(v or "") for k, v in zip(knowledge["Id"], knowledge["FAQ_Answer__c"], strict=True)
            },
            issue_keys=(
                {}
                if issues is None
                else {str(k): str(v) for k, v in zip(issues["Id"], issues["_issue_key"], strict=True)}
            ),
            articles=(
                articles
                if articles is not None
                else pd.DataFrame(columns=["Id", "_topic", "_kind", "_subject", "_facts"])
            ),
            policies=policies,
        )
        data.message_cases = None if message_cases is None else frozenset(message_cases)
        data._emails_by_case = {str(k): np.asarray(v) for k, v in emails.groupby("ParentId").indices.items()}
        data._chats_by_case = {str(k): np.asarray(v) for k, v in chats.groupby("CaseId").indices.items()}
        data.case_position = {str(k): i for i, k in enumerate(cases["Id"].tolist())}
        data.order_accounts = accounts_asked
        data.item_order = item_order
        data.products_of_order = products_of_order
        data.order_date = order_date
        data.activated_orders_on = activated_orders_on
        return data

    # -- slices --------------------------------------------------------------------------------------

    def cases_created(self, start: datetime, end: datetime, *, end_inclusive: bool) -> pd.DataFrame:
        """Cases with CreatedDate >= start and < end (or <= end)."""
        lo = np.searchsorted(self.case_created, _np_time(start), side="left")
        hi = np.searchsorted(self.case_created, _np_time(end), side="right" if end_inclusive else "left")
        return self.cases.iloc[lo:hi]

    def assignments_between(self, start: datetime, end: datetime) -> pd.DataFrame:
        """Owner Assignment rows with CreatedDate >= start and <= end (both inclusive, as CRMArena)."""
        lo = np.searchsorted(self.assign_created, _np_time(start), side="left")
        hi = np.searchsorted(self.assign_created, _np_time(end), side="right")
        return self.assignments.iloc[lo:hi]

    def orders_loaded(self, account: str) -> None:
        if self.order_accounts is not None and account not in self.order_accounts:
            raise KeyError(
                f"the orders of account {account} were not loaded (TaskData.load(order_contacts=...) names the "
                "contacts whose accounts' orders are read); load it with that contact, or without order_contacts"
            )

    def _messages_loaded(self, case_id: str) -> None:
        if self.message_cases is not None and case_id not in self.message_cases:
            raise KeyError(
                f"the messages of case {case_id} were not loaded (TaskData.load(message_cases=...) names "
                "the cases whose emails and chats are read); load it with that case, or without message_cases"
            )

    def emails_of(self, case_id: str) -> pd.DataFrame:
        self._messages_loaded(case_id)
        return self.emails.iloc[self._emails_by_case.get(case_id, np.empty(0, dtype=int))]

    def chats_of(self, case_id: str) -> pd.DataFrame:
        self._messages_loaded(case_id)
        return self.chats.iloc[self._chats_by_case.get(case_id, np.empty(0, dtype=int))]


# -- helpers -------------------------------------------------------------------------------------------


def pick_extreme(values: Mapping[str, float], extrema: str) -> tuple[list[str], float | None]:
    """The keys with the min (or max) value, sorted, and the margin to the runner-up value (None if alone)."""
    if extrema not in ("min", "max"):
        raise ParamError(f"params.extrema must be `min` or `max`, got {extrema!r}.")
    if not values:
        return [], None
    sign = 1.0 if extrema == "min" else -1.0
    best = min(sign * v for v in values.values())
    winners = sorted(
        k for k, v in values.items() if math.isclose(sign * v, best, rel_tol=0, abs_tol=TIE_TOLERANCE)
    )
    rest = [sign * v for k, v in values.items() if k not in winners]
    margin = (min(rest) - best) if rest else None
    return winners, margin


def _extreme_solution(
    values: dict[str, float], extrema: str, details: dict[str, Any] | None = None
) -> Solution:
    winners, margin = pick_extreme(values, extrema)
    if not winners:
        return Solution(None, values, None, details=details or {})
    if len(winners) > 1:
        return Solution(None, values, 0.0, tied=tuple(winners), details=details or {})
    return Solution(winners[0], values, margin, details=details or {})


def _str_param(params: Mapping[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise ParamError(f"params.{key} must be a non-empty string, got {value!r}.")
    return value


def _qualified_agents(assignments: pd.DataFrame, n_cases: int) -> dict[str, int]:
    handled = assignments["NewValue__c"].dropna().value_counts()
    return {str(k): int(v) for k, v in handled.items() if int(v) > n_cases}


# -- the nine tasks ------------------------------------------------------------------------------------


def solve_case_routing(data: TaskData, params: Mapping[str, Any]) -> Solution:
    issue = _str_param(params, "issue_id")
    product = _str_param(params, "product_id")
    by_issue = data.owner_counts(True, "IssueId__c", issue)
    stage1 = {str(k): float(v) for k, v in by_issue.items()}
    details: dict[str, Any] = {"closed_issue_cases": stage1}
    winners, margin = pick_extreme(stage1, "max")
    if len(winners) <= 1:
        return Solution(winners[0] if winners else None, stage1, margin, details=details)
    product_counts = data.owner_counts(True, "Product2Id", product)
    stage2 = {a: float(product_counts.get(a, 0)) for a in winners}
    details["closed_product_cases"] = stage2
    winners, margin = pick_extreme(stage2, "max")
    if len(winners) == 1:
        return Solution(winners[0], stage2, margin, details=details)
    not_closed = data.owner_counts(False)
    stage3 = {a: float(not_closed.get(a, 0)) for a in winners}
    details["not_closed_cases"] = stage3
    winners, margin = pick_extreme(stage3, "min")
    if len(winners) == 1:
        return Solution(winners[0], stage3, margin, details=details)
    return Solution(None, stage3, 0.0, tied=tuple(winners), details=details)


def solve_handle_time(data: TaskData, params: Mapping[str, Any]) -> Solution:
    extrema = _str_param(params, "extrema")
    n_cases = _int_param(params, "n_cases")
    start, end = window(params)
    rows = data.assignments_between(start, end)
    qualified = _qualified_agents(rows, n_cases)
    per_case = rows["CaseId__c"].value_counts()
    single = set(per_case.index[per_case == 1])
    cases = data.cases_created(start, end, end_inclusive=False)
    cases = cases[
        (cases["Status"] == CLOSED)
        & cases["OwnerId"].isin(list(qualified))
        & cases["Id"].isin(list(single))
        & cases["_handle_seconds"].notna()
    ]
    minutes = (cases["_handle_seconds"] / 60.0).groupby(cases["OwnerId"]).mean()
    values = {str(k): float(v) for k, v in minutes.items()}
    details = {"window": _window_text(start, end), "qualified": qualified, "cases": len(cases)}
    return _extreme_solution(values, extrema, details)


def solve_transfer_count(data: TaskData, params: Mapping[str, Any]) -> Solution:
    extrema = _str_param(params, "extrema")
    n_cases = _int_param(params, "n_cases")
    start, end = window(params)
    rows = data.assignments_between(start, end)
    qualified = _qualified_agents(rows, n_cases)
    transfers = rows["OldValue__c"].dropna().value_counts()
    values = {str(k): float(v) for k, v in transfers.items() if str(k) in qualified and int(v) >= 1}
    details = {"window": _window_text(start, end), "qualified": qualified}
    return _extreme_solution(values, extrema, details)


def solve_named_entity_disambiguation(data: TaskData, params: Mapping[str, Any]) -> Solution:
    contact = _str_param(params, "contact_id")
    term = _str_param(params, "ambiguous_product_name")
    today = parse_param_datetime(params.get("today_date"), "today_date")
    period = _str_param(params, "period")
    purchase = (today - period_delta(period, _int_param(params, "interval_count"))).date()
    words = _term_words(term)
    candidates = sorted(
        pid for pid, pwords in data.product_words.items() if words and all(w in pwords for w in words)
    )
    account = data.contact_account.get(contact)
    data.orders_loaded(str(account))
    details: dict[str, Any] = {"purchase_date": purchase.isoformat(), "account": account}
    wanted = set(candidates)
    bought = {
        pid
        for oid in data.activated_orders_on.get((str(account), purchase), [])
        for pid in data.products_of_order.get(oid, [])
        if pid in wanted
    }
    found = sorted(bought)
    details["bought_matching"] = found
    if not found:
        return Solution(None, candidates, None, details=details)
    if len(found) > 1:
        return Solution(None, candidates, None, ambiguous=tuple(found), details=details)
    return Solution(found[0], candidates, None, details=details)


def _phrase_offers(text: str, phrases: Mapping[str, str]) -> list[str]:
    """Remedy keys whose phrase appears in `text` (case-insensitive), longest phrase first, no overlaps."""
    lower = text.lower()
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, str]] = []
    for key, phrase in sorted(phrases.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        needle = phrase.lower()
        if not needle:
            continue
        pos = lower.find(needle)
        while pos != -1:
            span = (pos, pos + len(needle))
            if not any(s < span[1] and span[0] < e for s, e in taken):
                taken.append(span)
                found.append((pos, key))
            pos = lower.find(needle, pos + 1)
    return [key for _, key in sorted(found)]


def agent_turns(data: TaskData, case_id: str) -> list[tuple[date, str, str]]:
    """(message date, channel, text) of every agent turn in the case's chats and outgoing emails."""
    turns: list[tuple[date, str, str]] = []
    # the columns as lists, not `itertuples` (which makes a namedtuple class per call): the same values
    chats = data.chats_of(case_id)
    for body, start, owner in zip(
        *(chats[c].tolist() for c in ("Body", "StartTime", "OwnerId")), strict=True
    ):
        if not isinstance(body, str) or pd.isna(start):
            continue
        name = data.user_names.get(str(owner), "")
        prefix = f"{name} (Agent): "
        for line in body.splitlines():
            if name and line.startswith(prefix):
                turns.append((start.date(), "chat", line[len(prefix) :]))
    emails = data.emails_of(case_id)
    columns = (emails[c].tolist() for c in ("Incoming", "TextBody", "MessageDate"))
    for incoming, text, sent in zip(*columns, strict=True):
        if incoming is False and isinstance(text, str) and not pd.isna(sent):
            turns.append((sent.date(), "email", text))
    return turns


def solve_policy_violation_identification(data: TaskData, params: Mapping[str, Any]) -> Solution:
    case_id = _str_param(params, "case_id")
    position = data.case_position.get(case_id)
    if position is None:
        return Solution(None, problem=f"case {case_id} is not in data/Case.csv")
    case = data.cases.iloc[position]
    issue_key = data.issue_keys.get(str(case["IssueId__c"]))
    if issue_key is None:
        return Solution(
            None,
            problem=f"issue {case['IssueId__c']} of case {case_id} has no _issue_key in latent/Issue__c.csv",
        )
    policy = data.policies.get("issues", {}).get(issue_key)
    if not isinstance(policy, Mapping):
        return Solution(
            None,
            problem=f"issue key {issue_key} of case {case_id} has no entry in latent/world/policies.json",
        )
    allowed: dict[str, int] = dict(policy.get("remedies", {}))
    phrases = {k: str(v.get("phrase") or "") for k, v in data.policies.get("remedies", {}).items()}
    policy_ids = data.policy_articles(issue_key)
    data._messages_loaded(case_id)  # and its item's order: loaded with the case's messages
    order_date = data.order_date.get(data.item_order.get(str(case["OrderItemId__c"]), ""))
    offers: list[dict[str, Any]] = []
    violations: list[dict[str, Any]] = []
    for when, channel, text in agent_turns(data, case_id):
        for remedy in _phrase_offers(text, phrases):
            days = (when - order_date).days if order_date is not None else None
            offer = {"remedy": remedy, "channel": channel, "date": when.isoformat(), "days": days}
            offers.append(offer)
            if remedy not in allowed:
                violations.append({**offer, "why": "not allowed for the issue"})
            elif days is not None and days > int(allowed[remedy]):
                violations.append({**offer, "why": f"after the {allowed[remedy]}-day window"})
    details = {"issue_key": issue_key, "order_date": order_date and order_date.isoformat(), "offers": offers}
    details["violations"] = violations
    if not violations:
        return Solution(None, [], None, details=details)
    if len(policy_ids) != 1:
        return Solution(
            None,
            policy_ids,
            problem=f"case {case_id} breaks the {issue_key} policy but {len(policy_ids)} issue_policy "
            f"articles have _subject {issue_key} in latent/Knowledge__kav.csv (expected exactly one)",
            details=details,
        )
    return Solution(policy_ids[0], policy_ids, None, details=details)


def _question_pattern(question: str) -> re.Pattern[str]:
    parts = re.split(r"\{[^{}]*\}", question)
    return re.compile("^" + ".+?".join(re.escape(p.strip().lower()) for p in parts) + "$")


def solve_knowledge_qa(data: TaskData, params: Mapping[str, Any]) -> Solution:
    article = _str_param(params, "article_id")
    question = _str_param(params, "question")
    row = data.articles[data.articles["Id"] == article]
    if row.empty:
        return Solution(None, problem=f"article {article} is not in latent/Knowledge__kav.csv")
    facts = json.loads(str(row.iloc[0]["_facts"] or "[]"))
    exact = [
        f
        for f in facts
        if question.strip()
        in {str(f.get("question", "")).strip(), *(str(q).strip() for q in f.get("asks") or [])}
    ]
    matches = exact or [
        f
        for f in facts
        if _question_pattern(str(f.get("question", ""))).match(" ".join(question.lower().split()))
    ]
    answers = sorted({str(f.get("answer")) for f in matches})
    details: dict[str, Any] = {"facts": len(facts), "text_has_answer": None}
    if not answers:
        return Solution(
            None,
            [],
            problem=f"article {article} has no planted fact with the question {question!r}",
            details=details,
        )
    if len(answers) > 1:
        return Solution(None, answers, ambiguous=tuple(answers), details=details)
    text = data.knowledge_text.get(article)
    details["text_has_answer"] = None if text is None else answers[0].lower() in text.lower()
    details["question_overlap"] = None if text is None else fidelity.overlap(question, text)
    return Solution(answers[0], answers, None, details=details)


def solve_top_issue_identification(data: TaskData, params: Mapping[str, Any]) -> Solution:
    product = _str_param(params, "product_id")
    start, end = window(params)
    cases = data.cases_created(start, end, end_inclusive=True)
    cases = cases[cases["Product2Id"] == product]
    counts = cases["IssueId__c"].dropna().value_counts()
    values = {str(k): float(v) for k, v in counts.items()}
    return _extreme_solution(values, "max", {"window": _window_text(start, end), "cases": len(cases)})


def solve_monthly_trend_analysis(data: TaskData, params: Mapping[str, Any]) -> Solution:
    product = _str_param(params, "product_id")
    period = _str_param(params, "period")
    if period not in ("month", "quarter"):
        raise ParamError(f"monthly_trend_analysis params.period must be month or quarter, got {period!r}.")
    start, end = window(params)
    cases = data.cases_created(start, end, end_inclusive=False)
    cases = cases[cases["Product2Id"] == product]
    counts = cases["CreatedDate"].dt.month.value_counts()
    values = {MONTHS[int(m) - 1]: float(v) for m, v in counts.items()}
    return _extreme_solution(values, "max", {"window": _window_text(start, end), "cases": len(cases)})


def solve_best_region_identification(data: TaskData, params: Mapping[str, Any]) -> Solution:
    start, end = window(params)
    cases = data.cases_created(start, end, end_inclusive=False)
    cases = cases[
        (cases["Status"] == CLOSED) & cases["ShippingState"].notna() & cases["_handle_seconds"].notna()
    ]
    means = cases["_handle_seconds"].groupby(cases["ShippingState"]).mean()
    values = {str(k): float(v) for k, v in means.items()}
    return _extreme_solution(values, "min", {"window": _window_text(start, end), "cases": len(cases)})


def _window_text(start: datetime, end: datetime) -> str:
    return f"{start:%Y-%m-%dT%H:%M:%SZ}..{end:%Y-%m-%dT%H:%M:%SZ}"


# -- the validators' half of the task registry ---------------------------------------------------------


@dataclass(frozen=True)
class IndependentSolver:
    """The independent derivation of one task (registered under the name of its `schemas.taskspec` spec).

    `solve` recomputes an instance from its params. The optional hooks let `validators/tasks.py` check what is
    particular to the task: `explain(sol)` says in a few words what the answer was derived from (shown in
    disagreements; value-table tasks get a default from their candidate table); `compare_candidates(sol,
    theirs)` says why the builder's `candidates` differ from the re-derived ones, for tasks whose candidates are
    not a value table; `check(sol, params)` returns (expected, found, message) when an instance breaks a rule of
    its own (e.g. a knowledge answer missing from its article).
    """

    solve: Callable[[TaskData, Mapping[str, Any]], Solution]
    explain: Callable[[Solution], str] | None = None
    compare_candidates: Callable[[Solution, Any], str | None] | None = None
    check: Callable[[Solution, Mapping[str, Any]], tuple[Any, Any, str] | None] | None = None


SOLVERS: dict[str, IndependentSolver] = {}


def register_solver(name: str, solver: IndependentSolver) -> IndependentSolver:
    if name in SOLVERS:
        raise ValueError(f"an independent solver for task {name!r} is registered already.")
    SOLVERS[name] = solver
    return solver


def _explain_ned(sol: Solution) -> str:
    d = sol.details
    return f"purchase date {d.get('purchase_date')}, bought matching products {d.get('bought_matching')}"


def _explain_pvi(sol: Solution) -> str:
    return f"issue {sol.details.get('issue_key')}, offers {sol.details.get('offers')}"


def _explain_routing(sol: Solution) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sol.details.items())


def _compare_ned(mine: Solution, theirs: Any) -> str | None:
    if not isinstance(theirs, list):
        return None if theirs is None else "candidates should be a list of product ids"
    allowed = [sorted(mine.candidates or []), sorted(mine.details.get("bought_matching", []))]
    if sorted(map(str, theirs)) in allowed:
        return None
    return (
        f"candidates {sorted(theirs)} are neither the products matching the search term {allowed[0]} "
        f"nor the matching products bought that day {allowed[1]}"
    )


def _check_knowledge(sol: Solution, params: Mapping[str, Any]) -> tuple[Any, Any, str] | None:
    """Faithful: the answer is in the article. (Whether the question copies the article is a fidelity figure,
    `details["question_overlap"]`, held to zero on the default org by tests/test_text_fidelity.py: the
    hand-made fixtures in tests/fixtures/tasks still use FAQ-style articles.)"""
    if sol.answer is None:
        return None
    if sol.details.get("text_has_answer") is False:
        return (
            sol.answer,
            params.get("article_id"),
            f"the answer {json.dumps(sol.answer, ensure_ascii=False)} does not appear in the FAQ_Answer__c of "
            f"article {params.get('article_id')}; the agent cannot find it — fix the article text.",
        )
    return None


register_solver("knowledge_qa", IndependentSolver(solve_knowledge_qa, check=_check_knowledge))
register_solver("monthly_trend_analysis", IndependentSolver(solve_monthly_trend_analysis))
register_solver("top_issue_identification", IndependentSolver(solve_top_issue_identification))
register_solver("case_routing", IndependentSolver(solve_case_routing, explain=_explain_routing))
register_solver(
    "named_entity_disambiguation",
    IndependentSolver(
        solve_named_entity_disambiguation, explain=_explain_ned, compare_candidates=_compare_ned
    ),
)
register_solver("handle_time", IndependentSolver(solve_handle_time))
register_solver("transfer_count", IndependentSolver(solve_transfer_count))
register_solver(
    "policy_violation_identification", IndependentSolver(solve_policy_violation_identification, _explain_pvi)
)
register_solver("best_region_identification", IndependentSolver(solve_best_region_identification))


def solve(data: TaskData, task: str, params: Mapping[str, Any]) -> Solution:
    """Re-derive one instance. Raises ParamError when `params` cannot be interpreted."""
    solver = SOLVERS.get(task)
    if solver is None:
        raise ParamError(f"Unknown task {task!r}; expected one of {', '.join(task_names())}.")
    return solver.solve(data, params)


@lru_cache(maxsize=4)
def _cached_data(root: Path, stamp: tuple[tuple[str, float], ...]) -> TaskData:
    return TaskData.load(root)


def solve_instance(root: Path | str, task: str, params: Mapping[str, Any]) -> str | list[str] | None:
    """The answer for one instance of the bundle at `root`: the answer string, None, or — when there is no
    single answer — the sorted list of tied (or ambiguous) candidates. The signature the hand-made
    fixtures in `tests/fixtures/tasks/` run any solver with."""
    path = Path(root).resolve()
    stamp = tuple(sorted((str(p), p.stat().st_mtime) for p in path.rglob("*") if p.is_file()))
    sol = solve(_cached_data(path, stamp), task, params)
    if sol.problem is not None:
        raise DerivationError(f"No answer can be derived for this {task} instance: {sol.problem}.")
    if sol.tied:
        return list(sol.tied)
    if sol.ambiguous:
        return list(sol.ambiguous)
    return sol.answer


__all__ = [
    "MONTHS",
    "SOLVERS",
    "DerivationError",
    "IndependentSolver",
    "ParamError",
    "Solution",
    "TaskData",
    "named_window",
    "period_delta",
    "register_solver",
    "solve",
    "solve_instance",
    "window",
]
