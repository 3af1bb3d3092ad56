"""Ground truth through the org's API: every task answer re-derived with CRMArena's tool functions.

Where `validators/task_solver.py` reads the bundle's CSVs, this module only talks to an org through a
`simple_salesforce.Salesforce` client (the embedded org, or a seeded real org): it calls CRMArena's tool
functions as `orgs/crmarena_tools.py` defines them (reference §9: get_agent_handled_cases_by_period,
get_non_transferred_case_ids, get_cases, get_agent_transferred_cases_by_period, get_shipping_state,
get_order_item_ids_by_product, get_issue_counts, get_account_id_by_contact_id, get_purchase_history,
search_products) — the same functions the agent harness (`evals/`) gives to models — and composes them the way
the reference solvers do, with orgseed's stated choices (routing step 3 counts Status != 'Closed'; an empty
non-transferred set means no counted case). Long id lists are given to a tool in chunks of `CHUNK` ids,
which gives the same rows. The few questions no tool asks (routing step 3, the evidence of a policy
violation, an article's body) are plain SOQL through the same connector. The client is passed in, so this
library never imports the org's implementation.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from orgs import crmarena_tools as ct
from orgs.crmarena_tools import ToolFailed
from schemas.rekey import rekey
from schemas.taskspec import task_names
from validators.task_solver import period_delta, window

CHUNK = 150
DT_OUT = "%Y-%m-%dT%H:%M:%S.%f%z"
SOSL_RESERVED = set("?&|!{}[]()^~*:\\\"'+-")
MONTHS = [datetime(2000, m, 1).strftime("%B") for m in range(1, 13)]
_TOOL_ERROR = re.compile(r"^(Error|Unknown action|[A-Z_]+: )")


@dataclass(frozen=True)
class SoqlDisagreement:
    idx: int
    task: str
    expected: Any
    found: Any
    message: str


def _dt(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.lru_cache(maxsize=1 << 16)
def _parse(value: str) -> datetime:
    # Memoised: the check reads the same cases' dates in many windows (scale 10: ~150,000 parses of far
    # fewer distinct values). datetimes are immutable, so sharing one is safe.
    # the org's shape (`2024-01-05T10:11:12.000+0000`) through fromisoformat, ~60x faster than strptime
    # (the answer check parses a date of every case it reads); anything else through the strict format
    if len(value) == 28 and value[10] == "T" and value[19] == "." and value[23] in "+-":
        return datetime.fromisoformat(value).replace(tzinfo=None)
    return datetime.strptime(value, DT_OUT).replace(tzinfo=None)


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _in(ids: Sequence[str]) -> str:
    return "(" + ", ".join(_quote(i) for i in ids) + ")"


def _chunks(ids: Sequence[str], size: int = CHUNK) -> Iterable[Sequence[str]]:
    for i in range(0, len(ids), size):
        yield ids[i : i + size]


def _sosl_term(term: str) -> str:
    return "".join("\\" + ch if ch in SOSL_RESERVED else ch for ch in term)


def _ok(result: Any, tool: str) -> Any:
    """A tool's result, or an error naming the tool when it returned CRMArena's error string."""
    if isinstance(result, str) and _TOOL_ERROR.match(result):
        raise ToolFailed(f"CRMArena's {tool} failed against the org: {result}", tool=tool)
    return result


# Rows a task's query cache keeps (least recently asked forgotten first). Unbounded, at scale 30 the handle
# time and transfer windows' rows kept the in-process check at 382 MB; bounded, 2-5% of the queries are asked
# again (`queries` counts them) and the check's memory no longer grows with the org.
CACHE_ROWS = 50_000


class OrgTools:
    """CRMArena's tool functions (`orgs/crmarena_tools.py`) over a simple-salesforce client, composed the way
    the reference solvers compose them, with a per-query cache. Long id lists go to a tool in chunks of
    `chunk` (same rows, shorter URLs for a real org; an org answering in process takes longer lists, so far
    fewer queries: the cross product of two chunked lists is what multiplies them)."""

    def __init__(self, sf: Any, chunk: int = CHUNK) -> None:
        # the solvers below only read the rows a tool returns (get_shipping_state changes the case dicts it
        # is given, which `shipping_states` makes afresh), so the cache's rows are handed out uncopied
        self.conn = ct.Connector(sf, cache=True, copies=False, cache_rows=CACHE_ROWS)
        self.chunk = chunk

    @property
    def queries(self) -> int:
        return self.conn.queries

    def soql(self, q: str) -> list[dict[str, Any]]:
        """A query outside CRMArena's tools (policy-violation evidence, routing step 3, articles)."""
        return self.conn.records(q)

    # -- the tools (reference §9) ------------------------------------------------------------------------

    def handled_by_agent(self, start: datetime, end: datetime) -> Counter[str]:
        counts = _ok(
            ct.get_agent_handled_cases_by_period(self.conn, _dt(start), _dt(end)),
            "get_agent_handled_cases_by_period",
        )
        return Counter({a: c for a, c in counts.items() if a})

    def transfers_by_agent(self, start: datetime, end: datetime) -> Counter[str]:
        counts = _ok(
            ct.get_agent_transferred_cases_by_period(self.conn, _dt(start), _dt(end)),
            "get_agent_transferred_cases_by_period",
        )
        return Counter(counts)

    def non_transferred_case_ids(self, start: datetime, end: datetime) -> list[str]:
        return sorted(
            _ok(
                ct.get_non_transferred_case_ids(self.conn, _dt(start), _dt(end)),
                "get_non_transferred_case_ids",
            )
        )

    def get_cases(
        self,
        start: datetime | None = None,
        end: datetime | None = None,
        agent_ids: Sequence[str] | None = None,
        case_ids: Sequence[str] | None = None,
        order_item_ids: Sequence[str] | None = None,
        issue_ids: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """CRMArena's get_cases; an empty list matches nothing (the tool itself would drop the filter)."""
        lists = {"agent_ids": agent_ids, "case_ids": case_ids, "order_item_ids": order_item_ids,
                 "issue_ids": issue_ids, "statuses": statuses}  # fmt: skip
        parts: list[list[tuple[str, list[str]]]] = []
        for name, values in lists.items():
            if values is None:
                continue
            values = sorted(values)
            if not values:
                return []
            parts.append([(name, list(chunk)) for chunk in _chunks(values, self.chunk)])
        dates = {"start_date": _dt(start) if start else None, "end_date": _dt(end) if end else None}
        out: list[dict[str, Any]] = []
        # Every long list is sent in chunks; the cross product of the chunks covers exactly the same rows.
        for combo in itertools.product(*parts):
            out += _ok(ct.get_cases(self.conn, **dates, **dict(combo)), "get_cases")
        return out

    def shipping_states(self, account_ids: Sequence[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for part in _chunks(sorted(set(account_ids)), self.chunk):
            rows = _ok(
                ct.get_shipping_state(self.conn, [{"AccountId": a} for a in part]), "get_shipping_state"
            )
            out.update({r["AccountId"]: r["ShippingState"] for r in rows})
        return out

    def order_item_ids_by_product(self, product_id: str) -> list[str]:
        return sorted(
            _ok(ct.get_order_item_ids_by_product(self.conn, product_id), "get_order_item_ids_by_product")
        )

    def issue_counts(self, start: datetime, end: datetime, item_ids: Sequence[str]) -> Counter[str]:
        counts: Counter[str] = Counter()
        for part in _chunks(item_ids, self.chunk):
            found = _ok(ct.get_issue_counts(self.conn, _dt(start), _dt(end), list(part)), "get_issue_counts")
            for issue, n in found.items():
                counts[issue] += int(n)
        return counts

    def account_of_contact(self, contact_id: str) -> str | None:
        found = _ok(ct.get_account_id_by_contact_id(self.conn, contact_id), "get_account_id_by_contact_id")
        return found if isinstance(found, str) else None

    def search_products(self, term: str) -> list[str]:
        return sorted(_ok(ct.search_products(self.conn, _sosl_term(term)), "search_products"))

    def purchase_history(self, account_id: str, day: date, product_ids: Sequence[str]) -> list[str]:
        out: list[str] = []
        for part in _chunks(product_ids, self.chunk):
            rows = _ok(
                ct.get_purchase_history(self.conn, account_id, f"{day.isoformat()}T00:00:00Z", list(part)),
                "get_purchase_history",
            )
            out += [r["Product2Id"] for r in rows]
        return out

    def emails_of_case(self, case_id: str) -> list[dict[str, Any]]:
        # CRMArena's get_email_messages_by_case_id does not select Incoming, which says who wrote the email
        return self.soql(
            "SELECT Subject, TextBody, FromAddress, ToAddress, MessageDate, Incoming FROM EmailMessage "
            f"WHERE ParentId = {_quote(case_id)}"
        )

    def chats_of_case(self, case_id: str) -> list[dict[str, Any]]:
        # CRMArena's get_livechat_transcript_by_case_id selects EndTime; the policy check dates a chat by its start
        return self.soql(
            f"SELECT Body, StartTime, EndTime FROM LiveChatTranscript WHERE CaseId = {_quote(case_id)}"
        )


# -- solvers composed from the tools ----------------------------------------------------------------------


def _extreme(values: dict[str, float], extrema: str) -> tuple[str | None, bool]:
    if not values:
        return None, False
    best = min(values.values()) if extrema == "min" else max(values.values())
    winners = sorted(k for k, v in values.items() if abs(v - best) <= 1e-9)
    return winners[0], len(winners) > 1


def _qualified(tools: OrgTools, start: datetime, end: datetime, n_cases: int) -> list[str]:
    return sorted(a for a, c in tools.handled_by_agent(start, end).items() if c > n_cases)


def handle_time(tools: OrgTools, p: dict[str, Any]) -> tuple[str | None, bool]:
    start, end = window(p)
    qualified = _qualified(tools, start, end, int(p["n_cases"]))
    single = tools.non_transferred_case_ids(start, end)
    if not qualified or not single:
        return None, False
    cases = tools.get_cases(start, end, agent_ids=qualified, case_ids=single, statuses=["Closed"])
    per: dict[str, list[float]] = {}
    for c in cases:
        minutes = (_parse(c["ClosedDate"]) - _parse(c["CreatedDate"])).total_seconds() / 60
        per.setdefault(c["OwnerId"], []).append(minutes)
    return _extreme({a: round(sum(v) / len(v), 6) for a, v in per.items()}, p["extrema"])


def transfer_count(tools: OrgTools, p: dict[str, Any]) -> tuple[str | None, bool]:
    start, end = window(p)
    qualified = set(_qualified(tools, start, end, int(p["n_cases"])))
    moves = {a: float(c) for a, c in tools.transfers_by_agent(start, end).items() if a in qualified and c > 0}
    return _extreme(moves, p["extrema"])


def case_routing(tools: OrgTools, p: dict[str, Any]) -> tuple[str | None, bool]:
    closed = Counter(c["OwnerId"] for c in tools.get_cases(issue_ids=[p["issue_id"]], statuses=["Closed"]))
    if not closed:
        return None, False
    top = max(closed.values())
    tied = sorted(a for a, v in closed.items() if v == top)
    if len(tied) > 1:
        items = tools.order_item_ids_by_product(p["product_id"])
        rows = tools.get_cases(agent_ids=tied, order_item_ids=items, statuses=["Closed"]) if items else []
        by_product = Counter(c["OwnerId"] for c in rows)
        best = max(by_product.get(a, 0) for a in tied)
        tied = sorted(a for a in tied if by_product.get(a, 0) == best)
    if len(tied) > 1:
        open_rows = tools.soql(
            f"SELECT OwnerId FROM Case WHERE OwnerId IN {_in(tied)} AND Status != 'Closed'"
        )
        not_closed = Counter(r["OwnerId"] for r in open_rows)
        low = min(not_closed.get(a, 0) for a in tied)
        tied = sorted(a for a in tied if not_closed.get(a, 0) == low)
    return tied[0], len(tied) > 1


def named_entity(tools: OrgTools, p: dict[str, Any]) -> tuple[str | None, bool]:
    today = datetime.strptime(p["today_date"], "%Y-%m-%dT%H:%M:%SZ")
    day = (today - period_delta(p["period"], int(p["interval_count"]))).date()
    candidates = tools.search_products(p["ambiguous_product_name"])
    account = tools.account_of_contact(p["contact_id"])
    if not candidates or account is None:
        return None, False
    bought = sorted(set(tools.purchase_history(account, day, candidates)))
    return (bought[0] if bought else None), len(bought) > 1


def top_issue(tools: OrgTools, p: dict[str, Any]) -> tuple[str | None, bool]:
    start, end = window(p)
    items = tools.order_item_ids_by_product(p["product_id"])
    counts = tools.issue_counts(start, end, items) if items else Counter()
    return _extreme({k: float(v) for k, v in counts.items()}, "max")


def monthly_trend(tools: OrgTools, p: dict[str, Any]) -> tuple[str | None, bool]:
    start, end = window(p)
    items = tools.order_item_ids_by_product(p["product_id"])
    cases = tools.get_cases(start, end, order_item_ids=items) if items else []
    counts = Counter(MONTHS[_parse(c["CreatedDate"]).month - 1] for c in cases)
    return _extreme({k: float(v) for k, v in counts.items()}, "max")


def best_region(tools: OrgTools, p: dict[str, Any]) -> tuple[str | None, bool]:
    start, end = window(p)
    cases = tools.get_cases(start, end, statuses=["Closed"])
    states = tools.shipping_states([c["AccountId"] for c in cases if c["AccountId"]])
    per: dict[str, list[float]] = {}
    for c in cases:
        state = states.get(c["AccountId"])
        if state:
            per.setdefault(state, []).append(
                (_parse(c["ClosedDate"]) - _parse(c["CreatedDate"])).total_seconds()
            )
    return _extreme({s: round(sum(v) / len(v), 3) for s, v in per.items()}, "min")


class BundleContext:
    """Latent tables the API does not expose: the policy table and which article states which policy."""

    def __init__(self, root: Path) -> None:
        self.policies = json.loads((root / "latent" / "world" / "policies.json").read_text())
        import csv

        with (root / "latent" / "Knowledge__kav.csv").open(newline="", encoding="utf-8") as fh:
            self.articles = {r["Id"]: r for r in csv.DictReader(fh)}
        with (root / "latent" / "Issue__c.csv").open(newline="", encoding="utf-8") as fh:
            self.issue_keys = {r["Id"]: r["_issue_key"] for r in csv.DictReader(fh)}
        self.phrases = sorted(
            ((v["phrase"].lower(), k) for k, v in self.policies["remedies"].items()), key=lambda x: -len(x[0])
        )


_AGENT_LINE = re.compile(r"^(?P<who>[^:\n]+) \(Agent\): (?P<text>.*)$", re.M)


def policy_violation(tools: OrgTools, ctx: BundleContext, p: dict[str, Any]) -> tuple[str | None, bool]:
    case_id = p["case_id"]
    rows = tools.soql(
        f"SELECT IssueId__c, OrderItemId__r.Order.EffectiveDate FROM Case WHERE Id = {_quote(case_id)}"
    )
    if not rows:
        return None, False
    issue = ctx.issue_keys[rows[0]["IssueId__c"]]
    ordered = date.fromisoformat(rows[0]["OrderItemId__r"]["Order"]["EffectiveDate"])
    policy = ctx.policies["issues"][issue]["remedies"]
    turns: list[tuple[str, date]] = []
    for chat in tools.chats_of_case(case_id):
        when = _parse(chat["StartTime"]).date()
        turns += [(m.group("text"), when) for m in _AGENT_LINE.finditer(chat["Body"] or "")]
    for mail in tools.emails_of_case(case_id):
        if not mail["Incoming"]:
            turns.append((mail["TextBody"] or "", _parse(mail["MessageDate"]).date()))
    for text, when in turns:
        lowered = text.lower()
        for phrase, key in ctx.phrases:
            if phrase in lowered:
                lowered = lowered.replace(phrase, " ")
                if key not in policy or (when - ordered).days > policy[key]:
                    articles = [
                        a
                        for a, r in ctx.articles.items()
                        if r["_kind"] == "issue_policy" and r["_subject"] == issue
                    ]
                    return (articles[0] if articles else None), False
    return None, False


def knowledge_qa(tools: OrgTools, ctx: BundleContext, p: dict[str, Any]) -> tuple[str | None, bool]:
    """The planted fact the question asks (latent: one of its `asks`, or its canonical question), provided
    the article the org serves states it; None when no fact matches or the org's text lacks it."""
    rows = tools.soql(f"SELECT FAQ_Answer__c FROM Knowledge__kav WHERE Id = {_quote(p['article_id'])}")
    body = (rows[0]["FAQ_Answer__c"] or "") if rows else ""
    latent = ctx.articles.get(str(p["article_id"]))
    facts = json.loads(latent["_facts"] or "[]") if latent else []
    question = " ".join(str(p["question"]).split()).lower()
    found = [
        str(f["answer"])
        for f in facts
        if question
        in {" ".join(str(q).split()).lower() for q in [f.get("question", ""), *(f.get("asks") or [])]}
    ]
    if not found:  # a canonical question with the issue's name in place of {issue}
        found = [str(f["answer"]) for f in facts if _canonical(str(f.get("question", ""))).match(question)]
    stated = [a for a in dict.fromkeys(found) if a.lower() in body.lower()]
    return (stated[0] if len(stated) == 1 else None), len(stated) > 1


def _canonical(question: str) -> re.Pattern[str]:
    parts = re.split(r"\{[^{}]*\}", " ".join(question.split()).lower())
    return re.compile("^" + ".+?".join(re.escape(x) for x in parts) + "$")


# -- the API half of the task registry ---------------------------------------------------------------

# check(tools, ctx, params, expected answer) -> (the answer the org's tools give, whether the org gives a tie).
ApiCheck = Callable[[OrgTools, BundleContext, dict[str, Any], Any], tuple[str | None, bool]]
API_CHECKS: dict[str, ApiCheck] = {}


def register_api_check(name: str, check: ApiCheck) -> ApiCheck:
    if name in API_CHECKS:
        raise ValueError(f"an API check for task {name!r} is registered already.")
    API_CHECKS[name] = check
    return check


def _tools_only(fn: Callable[[OrgTools, dict[str, Any]], tuple[str | None, bool]]) -> ApiCheck:
    return lambda tools, _ctx, params, _expected: fn(tools, params)


register_api_check("knowledge_qa", lambda tools, ctx, params, _expected: knowledge_qa(tools, ctx, params))
register_api_check("monthly_trend_analysis", _tools_only(monthly_trend))
register_api_check("top_issue_identification", _tools_only(top_issue))
register_api_check("case_routing", _tools_only(case_routing))
register_api_check("named_entity_disambiguation", _tools_only(named_entity))
register_api_check("handle_time", _tools_only(handle_time))
register_api_check("transfer_count", _tools_only(transfer_count))
register_api_check(
    "policy_violation_identification", lambda tools, ctx, params, _e: policy_violation(tools, ctx, params)
)
register_api_check("best_region_identification", _tools_only(best_region))


@dataclass
class SoqlCheck:
    disagreements: list[SoqlDisagreement]
    instances: int
    queries: int
    # idx -> (the answer the org's tools give, whether the org gives a tie), for every instance checked
    outcomes: dict[int, tuple[Any, bool]] = field(default_factory=dict)


# What the check reads of an instance: the candidates and margins, most of the file (at scale 1,000 the
# routing and agent tasks' candidates name every agent: ~25 MB of JSON, ~100 MB parsed), are left out.
CHECKED_KEYS = ("idx", "task", "params", "answer")


def ground_truth_lines(root: Path | str) -> list[dict[str, Any]]:
    """The instances of `tasks/ground_truth.jsonl`, in file order, each with its CHECKED_KEYS (those it has):
    read a line at a time, so the rest of a line is never held beyond it."""
    out = []
    with (Path(root) / "tasks" / "ground_truth.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            g = json.loads(line)
            out.append({k: g[k] for k in CHECKED_KEYS if k in g})
    return out


def check_tasks_via_api(
    root: Path | str,
    sf: Any,
    ids: Mapping[str, str] | None = None,
    only: Collection[int] | None = None,
    chunk: int = CHUNK,
    lines: Sequence[Mapping[str, Any]] | None = None,
) -> SoqlCheck:
    """Re-derive the instances of `tasks/ground_truth.jsonl` (those whose idx is in `only`, else all) through
    `sf` and compare with the answers. `sf` is a simple-salesforce client, or anything answering its `query`,
    `query_all` and `search` the same way (`orgs.local.inprocess.InProcessClient`). `ids` (bundle id -> org
    id): the org was loaded from the bundle and gave its records new ids; the ground truth and the latent
    tables are re-keyed before the check (schemas/rekey.py). `chunk`: ids per list in one query (`OrgTools`).
    `lines`: the file's lines, when the caller has read them (`ground_truth_lines`)."""
    root = Path(root)
    tools = OrgTools(sf, chunk)
    queries = 0
    task_of_tools: str | None = None
    ctx = BundleContext(root)
    if ids:
        ctx.articles = {ids.get(k, k): v for k, v in ctx.articles.items()}
        ctx.issue_keys = {ids.get(k, k): v for k, v in ctx.issue_keys.items()}
    out: list[SoqlDisagreement] = []
    outcomes: dict[int, tuple[Any, bool]] = {}
    wanted = None if only is None else set(only)
    if lines is None:
        lines = ground_truth_lines(root)
    checked = [g for g in lines if wanted is None or g["idx"] in wanted]
    for g in checked:
        if ids:
            g = rekey(g, ids)
        task, params, expected = g["task"], g["params"], g["answer"]
        check = API_CHECKS.get(task)
        if check is None:
            out.append(
                SoqlDisagreement(
                    g["idx"],
                    task,
                    expected,
                    None,
                    f"idx {g['idx']} ({task}): no API check is registered for this task "
                    f"(registered: {', '.join(task_names())}); register one in validators/tasks_soql.py.",
                )
            )
            continue
        if task != task_of_tools:  # a task's repeated queries are cached; other tasks share few of them
            queries += tools.queries
            tools, task_of_tools = OrgTools(sf, chunk), task
        found, tie = check(tools, ctx, params, expected)
        outcomes[g["idx"]] = (found, tie)
        if tie:
            why = "the org's data gives a tie; the instance has no unique answer."
        elif found != expected:
            why = (
                f"the recorded answer is {expected!r} but the CRMArena tool queries against the org give "
                f"{found!r}; check the org's data and the builder."
            )
        else:
            continue
        out.append(SoqlDisagreement(g["idx"], task, expected, found, f"idx {g['idx']} ({task}): {why}"))
    return SoqlCheck(out, len(checked), queries + tools.queries, outcomes)
