"""Validation in steps, holding only the objects a step reads: memory bounded by a few objects, not the org.

`check_schema`, `check_integrity`, `check_rules` and `check_text` read every object at once. Here the same
checks run as a fixed sequence of steps, each naming the objects it reads; an object's CSV is read when the
first step needs it and let go after the last one, so the whole org is never in memory at once (at most
Case with its emails and chats, or the orders with their items). Each step calls the checks' own functions
on just the objects it names, so the findings are exactly those of the whole-org checks (the tests compare
both on the corruption fixtures).

The sequence is ordered so that a large object's steps are contiguous: small objects first, then Case (its
near-duplicate search, the largest step, before anything else large is read), the orders, then what reads
Case (chats, emails, history). An object's steps that read it alone come before its lookups. A step may say
which columns of an object it reads; once the steps left read only some columns of a held object, the others
are let go (OrderItem is held as ids and lookups through the Case steps). The per-record checks (JSON Schema,
text) read ROW_CHUNK rows at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from orgs.bundle import Bundle
from schemas.gcpause import release_freed_memory
from schemas.model import OrgModel
from schemas.profile import Profile
from validators import integrity, rules, schema, text
from validators.findings import Finding
from validators.load import BundleData, read_object

Frames = dict[str, pd.DataFrame]

# objects read by the checks that join several (besides the per-object ones), in the order they are visited
# letting go of an object this large gives its memory back (validators' steps run with the collector paused)
LARGE_ROWS = 50_000
LARGE_ORDER = ("Case", "Order", "OrderItem", "LiveChatTranscript", "EmailMessage", "CaseHistory__c")
# the Case columns the rules keep for the checks of the case's emails, chats, history and customer
CASE_STATE = (
    *("Id", "_line", "Status", "CreatedDate", "ClosedDate"),
    *("AccountId", "ContactId", "OwnerId", "OrderItemId__c"),
)


@dataclass
class Step:
    family: str  # the check family its time counts for: schema, integrity, rules, text
    needs: tuple[str, ...]
    run: Callable[[Frames], list[Finding]]
    # the only columns it reads of some of the objects it needs (the others: every column); once the steps
    # left read only some columns of an object, the others are let go
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class _State:
    data: BundleData
    emit: Any = field(default_factory=rules._Emit)
    cases: pd.DataFrame | None = None


def _per_object(state: _State, name: str) -> list[Step]:
    data, model = state.data, state.data.model
    spec = model.get(name)
    profile = data.profile

    def time_span(fr: Frames) -> list[Finding]:
        if profile is not None:
            rules._time_span(fr, model, profile, state.emit)
        return []

    def ids(fr: Frames) -> list[Finding]:
        frame = fr.get(name)
        if frame is None:
            return []
        return [*integrity._ids(spec, frame), *integrity._unique(spec, frame)]

    def texts(fr: Frames) -> list[Finding]:
        return [*_texts_in_chunks(fr, data), *text.near_duplicates(fr)]

    targets = tuple(dict.fromkeys(t for f in spec.lookups for t in f.reference_to if model.has(t)))

    def lookups(fr: Frames) -> list[Finding]:
        frame = fr.get(name)
        if frame is None:
            return []
        # the ids of the objects the lookups point at (the object's own when one points at it); a set built
        # from a list, not by iterating the Series (~4x faster)
        known = {t: set(fr[t]["Id"].dropna().tolist()) for t in targets if t in fr}
        return integrity._lookups(spec, frame, model, known)

    # the steps that read the object alone first: its near-duplicate search (the largest) runs before the
    # objects its lookups point at are read
    steps = [
        Step("schema", (name,), lambda fr: _schema_in_chunks(fr, model)),
        Step("integrity", (name,), ids),
        Step("rules", (name,), time_span),
        Step("text", (name,), texts),
        Step("integrity", (name, *targets), lookups, {t: ("Id",) for t in targets if t != name}),
    ]
    if profile is not None and name in profile.bounds:
        for fname, bound in profile.bounds[name].items():
            parent = spec.field(fname).reference_to[0]
            reads = {name: (fname,), parent: ("Id", "_line")} if parent != name else {}
            steps.append(
                Step("integrity", (name, parent), _cardinality(model, profile, name, fname, bound), reads)
            )
    return steps


ROW_CHUNK = 16_384  # rows the per-record checks (JSON Schema, text) read at a time


def _schema_in_chunks(fr: Frames, model: OrgModel) -> list[Finding]:
    """`check_schema` a chunk of rows at a time: each record is checked on its own, so the findings are the
    same, and the check's per-column arrays are a chunk's, not the object's (EmailMessage's text bodies at
    scale 30: 49 MB above the frame at once)."""
    out: list[Finding] = []
    for name, frame in fr.items():
        for lo in range(0, max(len(frame), 1), ROW_CHUNK):
            out.extend(schema.check_schema({name: frame.iloc[lo : lo + ROW_CHUNK]}, model))
    return out


def _texts_in_chunks(fr: Frames, data: BundleData) -> list[Finding]:
    """The per-record text checks of `check_text` (present and whole, control characters, doubled
    determiners, articles before plurals, zero prices) a chunk of rows at a time. Each finding is about one
    record, so the findings are the same; the checks' screening scans join a chunk's texts, not the
    object's (EmailMessage's bodies at scale 30: ~30 MB per joined column). `_controls` reports the first
    CONTROL_LIMIT rows of a column: the chunks' findings are cut to the first CONTROL_LIMIT per column."""
    out: list[Finding] = []
    shown: dict[tuple[str | None, str | None], int] = {}
    for name, frame in fr.items():
        for lo in range(0, max(len(frame), 1), ROW_CHUNK):
            part = {name: frame.iloc[lo : lo + ROW_CHUNK]}
            out.extend(text._presence(part, data.model))
            for f in text._controls(part):
                key = (f.object, f.field)
                shown[key] = shown.get(key, 0) + 1
                if shown[key] <= text.CONTROL_LIMIT:
                    out.append(f)
            with_part = replace(data, raw=part)
            screened = text.screens(with_part)  # each column joined and screened once for the three
            out.extend(text._doublings(part, screened))
            out.extend(text._bare_articles(with_part, screened))
            out.extend(text.zero_prices(part, screened))
    return out


def _cardinality(
    model: OrgModel, profile: Profile, child: str, fname: str, bound: tuple[int, int]
) -> Callable[[Frames], list[Finding]]:
    """The cardinality check of one bound of the profile (`check_integrity` checks them all at once)."""
    one = replace(profile, bounds={child: {fname: bound}})

    def run(fr: Frames) -> list[Finding]:
        return integrity._cardinality(fr, model, one)

    return run


def plan(state: _State) -> list[Step]:
    """Every step, in the order they run."""
    data, model = state.data, state.data.model
    span_end = pd.Timestamp(data.profile.span.end_dt) if data.profile else None
    emit = state.emit
    large = [n for n in LARGE_ORDER if model.has(n)]
    steps: list[Step] = []
    for spec in model:
        if spec.name not in large:
            steps.extend(_per_object(state, spec.name))
    steps.append(Step("text", ("Knowledge__kav",), lambda fr: text._policies(replace(data, raw=fr))))

    def orders(fr: Frames) -> list[Finding]:
        rules._orders(fr, emit)
        return []

    def cases(fr: Frames) -> list[Finding]:
        if "Case" in fr:
            state.cases = rules._cases(fr["Case"][list(CASE_STATE)], span_end, emit)
        return []

    def with_cases(
        name: str, fn: Callable[[pd.DataFrame, pd.DataFrame, Any], None], reads: tuple[str, ...] | None = None
    ) -> Step:
        def run(fr: Frames) -> list[Finding]:
            if state.cases is not None and name in fr:
                fn(fr[name], state.cases, emit)
            return []

        return Step("rules", (name,), run, {name: reads} if reads else {})

    def case_customer(fr: Frames) -> list[Finding]:
        if state.cases is not None:
            rules._case_customer(fr, state.cases, emit)
        return []

    def release_cases(fr: Frames) -> list[Finding]:
        state.cases = None
        return []

    for name in large:
        steps.extend(_per_object(state, name))
        if name == "OrderItem":
            steps.append(
                Step("rules", ("Pricebook2", "PricebookEntry", "Order", "OrderItem", "Product2"), orders)
            )
        elif name == "Case":
            steps.append(Step("rules", ("Case",), cases, {"Case": CASE_STATE}))
            steps.append(
                Step(
                    "text",
                    ("Case", "OrderItem", "Product2"),
                    text._products,
                    {
                        "Case": ("Id", "_line", "Subject", "Description", "OrderItemId__c"),
                        "OrderItem": ("Id", "Product2Id"),
                        "Product2": ("Id", "Name"),
                    },
                )
            )
        elif name == "LiveChatTranscript":
            steps.append(
                Step(
                    "rules",
                    ("Contact", "OrderItem", "Order", "LiveChatTranscript"),
                    case_customer,
                    {
                        "Contact": ("Id", "AccountId"),
                        "OrderItem": ("Id", "OrderId"),
                        "Order": ("Id", "AccountId", "EffectiveDate"),
                        "LiveChatTranscript": ("Id", "_line", "CaseId", "AccountId", "ContactId"),
                    },
                )
            )
            steps.append(with_cases(name, rules._chats))
        elif name == "EmailMessage":
            steps.append(with_cases(name, rules._emails, ("Id", "_line", "ParentId", "MessageDate")))
            steps.append(
                Step(
                    "text",
                    ("Case", "Issue__c", "EmailMessage", "LiveChatTranscript"),
                    lambda fr: text._offers(replace(data, raw=fr)),
                    {
                        "Case": ("Id", "_line", "IssueId__c"),
                        "Issue__c": ("Id", "Name"),
                        "EmailMessage": ("Id", "_line", "ParentId", "Incoming", "TextBody"),
                        "LiveChatTranscript": ("Id", "_line", "CaseId", "Body"),
                    },
                )
            )
        elif name == "CaseHistory__c":
            steps.append(with_cases(name, rules._history))
    steps.append(Step("rules", (), release_cases))
    return steps


def _columns_left(steps: list[Step]) -> list[dict[str, set[str]]]:
    """For each step, the objects that the steps after it read only some columns of, with those columns (an
    object some later step reads whole, or none reads, is not listed)."""
    out: list[dict[str, set[str]]] = [{} for _ in steps]
    wanted: dict[str, set[str] | None] = {}  # None: some later step reads every column
    for i in range(len(steps) - 1, -1, -1):
        out[i] = {n: set(c) for n, c in wanted.items() if c is not None}
        step = steps[i]
        for name in step.needs:
            reads = step.columns.get(name)
            if reads is None:
                wanted[name] = None
            elif name not in wanted:
                wanted[name] = set(reads)
            elif (have := wanted[name]) is not None:
                have.update(reads)
    return out


@dataclass
class Outcome:
    findings: list[Finding]
    objects: dict[str, int]  # the readable objects and their record counts
    timings: dict[str, float]


def run_checks(data: BundleData, bundle: Bundle) -> Outcome:
    """Every check of `check_schema`, `check_integrity`, `check_rules` and `check_text` on the bundle that
    `data` describes (read without its objects), reading each object when a step first needs it and letting
    it go after the last. Objects whose CSV cannot be read become `bundle.csv` findings in `data.problems`."""
    state = _State(data)
    steps = plan(state)
    last: dict[str, int] = {}
    for i, step in enumerate(steps):
        for name in step.needs:
            last[name] = i
    keep = _columns_left(steps)
    frames: Frames = {}
    attempted: set[str] = set()
    objects: dict[str, int] = {}
    timings = {"load": 0.0, "schema": 0.0, "integrity": 0.0, "rules": 0.0, "text": 0.0}
    findings: list[Finding] = []
    for i, step in enumerate(steps):
        for name in step.needs:
            if name not in attempted and data.model.has(name):
                attempted.add(name)
                t = time.perf_counter()
                frame = read_object(data, bundle, data.model.get(name))
                timings["load"] += time.perf_counter() - t
                if frame is not None:
                    frames[name] = frame
                    objects[name] = len(frame)
        t = time.perf_counter()
        findings.extend(step.run({n: frames[n] for n in step.needs if n in frames}))
        timings[step.family] += time.perf_counter() - t
        done = [n for n in frames if last.get(n, -1) <= i]
        for name in done:
            del frames[name]
        narrowed = []
        for name, columns in keep[i].items():
            frame = frames.get(name)
            if frame is not None and len(columns) < len(frame.columns):
                frames[name] = frame[[c for c in frame.columns if c in columns]]
                narrowed.append(name)
        if any(objects.get(n, 0) >= LARGE_ROWS for n in (*done, *narrowed)):
            release_freed_memory()
    for spec in data.model:  # an object no step reads is still read, so a broken CSV is still reported
        if spec.name not in attempted:
            attempted.add(spec.name)
            frame = read_object(data, bundle, spec)
            if frame is not None:
                objects[spec.name] = len(frame)
    findings.extend(state.emit.out)
    return Outcome(
        findings=findings,
        objects={spec.name: objects[spec.name] for spec in data.model if spec.name in objects},
        timings={k: round(v, 4) for k, v in timings.items()},
    )
