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
text) read ROW_CHUNK rows at a time. The steps that read the objects' latent tables (the articles' and offers'
policies) come after those of the objects they read, so that a build can run the others while it still writes
objects (`StagedRun.advance`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
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
    latent: bool = False  # it reads the objects' latent tables (latent/<Object>.csv), read with the manifest


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

    def chat_customer(fr: Frames) -> list[Finding]:
        if state.cases is not None:
            rules._chat_customer(fr, state.cases, emit)
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
            # the cases against their orders' customers and dates: the last step to read the orders, which are
            # let go before the chats and emails are read (at scale 300 they were ~230 MB of the chats' steps)
            steps.append(
                Step(
                    "rules",
                    ("Contact", "OrderItem", "Order"),
                    case_customer,
                    {
                        "Contact": ("Id", "AccountId"),
                        "OrderItem": ("Id", "OrderId"),
                        "Order": ("Id", "AccountId", "EffectiveDate"),
                    },
                )
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
                    ("LiveChatTranscript",),
                    chat_customer,
                    {"LiveChatTranscript": ("Id", "_line", "CaseId", "AccountId", "ContactId")},
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
                    latent=True,
                )
            )
        elif name == "CaseHistory__c":
            steps.append(with_cases(name, rules._history))
    # the articles against their latent kinds and the policies: after the objects' own steps, which can then
    # run before the latent tables are read (StagedRun.advance)
    steps.append(
        Step("text", ("Knowledge__kav",), lambda fr: text._policies(replace(data, raw=fr)), latent=True)
    )
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


class StagedRun:
    """The steps of `plan`, run one at a time: `run_checks` runs them all at once; a build's sidecar runs the
    first ones early (`advance`), each once the objects it reads are written, while the building process
    still generates the others, and the rest later (`finish`). Either way the steps, the objects each reads
    and the findings are the same. A step that reads the objects' latent tables (`Step.latent`) waits for
    `finish`, which reads them with the manifest; so do the steps after it."""

    def __init__(self, data: BundleData, bundle: Bundle) -> None:
        self.data, self.bundle = data, bundle
        self.state = _State(data)
        self.steps = plan(self.state)
        self.last: dict[str, int] = {}
        for i, step in enumerate(self.steps):
            for name in step.needs:
                self.last[name] = i
        self.keep = _columns_left(self.steps)
        self.frames: Frames = {}
        self.attempted: set[str] = set()
        self.objects: dict[str, int] = {}
        self.timings = {"load": 0.0, "schema": 0.0, "integrity": 0.0, "rules": 0.0, "text": 0.0}
        self.findings: list[Finding] = []
        self.done = 0  # steps run

    @property
    def read(self) -> set[str]:
        """The objects read so far (what `advance` ran depends on their files)."""
        return set(self.attempted)

    def advance(self, written: AbstractSet[str]) -> bool:
        """Run the next step if it reads only objects in `written` (whose files are complete) and no latent
        table; whether it ran."""
        if self.done >= len(self.steps):
            return False
        step = self.steps[self.done]
        if step.latent or not all(n in written or not self.data.model.has(n) for n in step.needs):
            return False
        self._run(self.done)
        return True

    def finish(self) -> Outcome:
        """Run the steps left, read the objects no step read (so a broken CSV is still reported) and gather
        the outcome."""
        while self.done < len(self.steps):
            self._run(self.done)
        data, bundle = self.data, self.bundle
        for spec in data.model:
            if spec.name not in self.attempted:
                self.attempted.add(spec.name)
                frame = read_object(data, bundle, spec)
                if frame is not None:
                    self.objects[spec.name] = len(frame)
        self.findings.extend(self.state.emit.out)
        return Outcome(
            findings=self.findings,
            objects={spec.name: self.objects[spec.name] for spec in data.model if spec.name in self.objects},
            timings={k: round(v, 4) for k, v in self.timings.items()},
        )

    def _run(self, i: int) -> None:
        data, frames, step = self.data, self.frames, self.steps[i]
        for name in step.needs:
            if name not in self.attempted and data.model.has(name):
                self.attempted.add(name)
                t = time.perf_counter()
                frame = read_object(data, self.bundle, data.model.get(name))
                self.timings["load"] += time.perf_counter() - t
                if frame is not None:
                    frames[name] = frame
                    self.objects[name] = len(frame)
        t = time.perf_counter()
        self.findings.extend(step.run({n: frames[n] for n in step.needs if n in frames}))
        self.timings[step.family] += time.perf_counter() - t
        done = [n for n in frames if self.last.get(n, -1) <= i]
        for name in done:
            del frames[name]
        narrowed = []
        for name, columns in self.keep[i].items():
            frame = frames.get(name)
            if frame is not None and len(columns) < len(frame.columns):
                frames[name] = frame[[c for c in frame.columns if c in columns]]
                narrowed.append(name)
        if any(self.objects.get(n, 0) >= LARGE_ROWS for n in (*done, *narrowed)):
            release_freed_memory()
        self.done = i + 1


def run_checks(data: BundleData, bundle: Bundle) -> Outcome:
    """Every check of `check_schema`, `check_integrity`, `check_rules` and `check_text` on the bundle that
    `data` describes (read without its objects), reading each object when a step first needs it and letting
    it go after the last. Objects whose CSV cannot be read become `bundle.csv` findings in `data.problems`."""
    return StagedRun(data, bundle).finish()
