"""Validation in steps, holding only the objects a step reads: memory bounded by a few objects, not the org.

`check_schema`, `check_integrity`, `check_rules` and `check_text` read every object at once. Here the same
checks run as a fixed sequence of steps, each naming the objects it reads; an object is read when the first
step needs it and let go after the last one, so the whole org is never in memory at once. Each step calls the
checks' own functions on just the objects it names, so the findings are exactly those of the whole-org checks
(the tests compare both on the corruption fixtures).

An object's first steps look at one record at a time (JSON Schema, the time span, the per-record text checks,
and for the chats and emails the remedies their texts offer): they are block steps, fed together from one
reading of its file, ROW_CHUNK rows at a time. What the steps after them read of the object (its ids, lookups,
dates, and the texts the near-duplicate search compares) is all that is kept of it, so a large object's free
text (EmailMessage's bodies) is never held whole. Every step says which columns it reads; when an object is
first read whole, only the columns the steps from there on read are kept, and once the steps left read fewer,
the others are let go.

The largest objects (STREAMED: OrderItem, EmailMessage and CaseHistory__c, 7.1, 3.2 and 3.4 M rows at scale
1,000) are never held: all their checks are block steps fed from one reading of their files (their ids'
repeats found by a 64-bit hash per record, the few records whose hashes repeat read again to compare their
values; the history's rules from each row's case, time, kind and values as numbers, `rules.HistoryRows`, the
rows they report read again), and Case, whose lookups name the order items, keeps only the items the cases
name, read beforehand (`_named_rows`).

The sequence is ordered so that a large object's steps are contiguous: small objects first, then Case (its
near-duplicate search, the largest step, before anything else large is read), the orders, then what reads
Case (chats, emails, history). The steps that read the objects' latent tables (the articles' and offers'
policies) come after those of the objects they read, so that a build can run the others while it still writes
objects (`StagedRun.advance`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Any, overload

import numpy as np
import pandas as pd

from orgs.bundle import Bundle, BundleError, PackedColumn
from schemas.gcpause import release_freed_memory
from schemas.model import ObjectSpec, OrgModel
from schemas.profile import Profile
from validators import integrity, rules, schema, text
from validators.findings import Finding
from validators.load import BundleData, read_latent, read_object, unreadable

Frames = dict[str, pd.DataFrame]

# objects read by the checks that join several (besides the per-object ones), in the order they are visited
# letting go of an object this large gives its memory back (validators' steps run with the collector paused)
LARGE_ROWS = 50_000
LARGE_ORDER = ("Case", "Order", "OrderItem", "LiveChatTranscript", "EmailMessage", "CaseHistory__c")
# objects never held whole (OrderItem: 7.1 M rows at scale 1,000, ~1 GB held as strings through the order
# steps; the emails' and the history's ids, cases and dates, each ~170-190 MB at scale 300 through their last
# steps): their own checks read them a block at a time, all from one reading of the file, and an object
# looking them up keeps only the rows its lookups name (`_named_rows`)
STREAMED = ("OrderItem", "EmailMessage", "CaseHistory__c")
# what `_named_rows` keeps of a streamed object's rows (besides Id and _line): what the steps reading them read
NAMED_COLUMNS = {"OrderItem": ("OrderId", "Product2Id")}
# the Case columns the rules keep for the checks of the case's emails, chats, history and customer
CASE_STATE = (
    *("Id", "_line", "Status", "CreatedDate", "ClosedDate"),
    *("AccountId", "ContactId", "OwnerId", "OrderItemId__c"),
)


@dataclass
class Blocks:
    """A check that reads an object a block of rows at a time: `feed` each block in record order, then
    `close` gives its findings (a check whose reading stopped at an unreadable row is dropped unclosed)."""

    feed: Callable[[pd.DataFrame], None]
    close: Callable[[], list[Finding]]


@dataclass
class Step:
    family: str  # the check family its time counts for: schema, integrity, rules, text
    needs: tuple[str, ...]
    run: Callable[[Frames], list[Finding]] | None
    # the only columns it reads of some of the objects it needs (the others: every column); once the steps
    # left read only some columns of an object, the others are let go
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # the objects whose latent tables (latent/<Object>.csv) it reads: each is read when the first step naming it
    # runs, and let go after the last (`StagedRun`)
    latent: tuple[str, ...] = ()
    # a check of `needs[0]` a block of rows at a time, started with the frames of the other objects it
    # needs (then `run` is None): the consecutive steps of one object that read it so are fed from one
    # reading of its file, which keeps only the columns the steps after them read
    blocks: Callable[[Frames], Blocks] | None = None
    # the step reads what it needs of `needs[0]` from its file itself (`run` is given the other objects' held
    # frames only): it neither builds nor keeps that object's held frame
    own_read: bool = False
    # objects of `needs` the step reads itself from their files, a block at a time (an object of STREAMED):
    # they are neither read for it nor held
    streams: tuple[str, ...] = ()


@dataclass
class _State:
    data: BundleData
    bundle: Bundle | None = None
    emit: Any = field(default_factory=rules._Emit)
    cases: pd.DataFrame | None = None
    # the chats' and emails' messages as `_offers` reads them, worked out as they were read, against one
    # numbering of the cases
    offers: dict[str, text.MessageOffers] = field(default_factory=dict)
    case_issues: text.CaseIssues | None = None
    # (object, streamed object) → the rows of the streamed object the object's lookups name (`_named_rows`)
    named: dict[tuple[str, str], pd.DataFrame] = field(default_factory=dict)
    # an object's distinct ids, as an index the steps reading a streamed object's blocks look them up in
    indexes: dict[str, pd.Index] = field(default_factory=dict)
    # whether some order item names it, per Order row: worked out as OrderItem is read, for `rules._orders`
    has_items: np.ndarray | None = None


def _per_object(state: _State, name: str) -> list[Step]:
    data, model = state.data, state.data.model
    spec = model.get(name)
    profile = data.profile

    def schema_blocks(fr: Frames) -> Blocks:
        out: list[Finding] = []
        return Blocks(lambda block: out.extend(schema.check_schema({name: block}, model)), lambda: out)

    def time_span_blocks(fr: Frames) -> Blocks:
        emit = rules._Emit()  # its own: a check dropped unclosed leaves no finding behind

        def feed(block: pd.DataFrame) -> None:
            if profile is not None:
                rules._time_span({name: block}, model, profile, emit)

        return Blocks(feed, lambda: emit.out)

    def ids(fr: Frames) -> list[Finding]:
        frame = fr.get(name)
        if frame is None:
            return []
        return [*integrity._ids(spec, frame), *integrity._unique(spec, frame)]

    unique = [f.name for f in spec.fields if f.type != "id" and (f.unique or f.external_id)]
    together = integrity.UNIQUE_TOGETHER.get(name, ((), ""))[0]
    near = tuple(f for o, f in text.NEAR_DUPLICATE_SCOPE if o == name)
    targets = tuple(dict.fromkeys(t for f in spec.lookups for t in f.reference_to if model.has(t)))
    streamed = tuple(t for t in targets if t in STREAMED and t != name)
    held = tuple(t for t in targets if t not in streamed)
    lookup_fields = tuple(f.name for f in spec.lookups)

    def named_rows(fr: Frames) -> list[Finding]:
        frame = fr.get(name)
        for t in streamed:
            state.named.pop((name, t), None)
            fields = [f.name for f in spec.lookups if t in f.reference_to]
            got = None if frame is None else _named_rows(state, t, frame, fields)
            if got is not None:
                state.named[(name, t)] = got
        return []

    def lookups(fr: Frames) -> list[Finding]:
        frame = fr.get(name)
        if frame is None:
            return []
        # the ids of the objects the lookups point at (the object's own when one points at it); a set built
        # from a list, not by iterating the Series (~4x faster)
        known = {t: _known_ids(fr[t]["Id"], frame, spec, t) for t in held if t in fr}
        # a streamed object's: those of its rows the lookups name (a target unreadable has none: unchecked)
        known.update(
            {t: set(state.named[(name, t)]["Id"].tolist()) for t in streamed if (name, t) in state.named}
        )
        return integrity._lookups(spec, frame, model, known)

    def near_duplicates(fr: Frames) -> list[Finding]:
        return _near_duplicates(state, spec, near)

    # the near-duplicate search first (the largest step), reading only the texts it compares, before anything
    # of the object is held (at scale 1,000 Case's held frame was ~700 MB beside its index); then the
    # per-record checks, from one reading of the object's file a block at a time; then the steps that read the
    # object whole, before the objects its lookups point at are read
    steps = [Step("text", (name,), near_duplicates, own_read=True)] if near else []
    steps += [
        Step("schema", (name,), None, blocks=schema_blocks),
        Step("rules", (name,), None, blocks=time_span_blocks),
        Step("text", (name,), None, blocks=lambda fr: _text_blocks(name, data)),
    ]
    if name in STREAMED:
        return steps + _streamed_steps(state, spec, targets)
    steps.append(Step("integrity", (name,), ids, {name: _cols("Id", "_line", *unique, *together)}))
    if streamed:
        named_fields = _cols(*(f.name for f in spec.lookups if set(f.reference_to) & set(streamed)))
        steps.append(Step("integrity", (name, *streamed), named_rows, {name: named_fields}, streams=streamed))
    reads: dict[str, tuple[str, ...]] = {t: ("Id",) for t in held if t != name}
    reads[name] = _cols("Id", "_line", *lookup_fields)
    steps.append(Step("integrity", (name, *held), lookups, reads))
    if profile is not None and name in profile.bounds:
        for fname, bound in profile.bounds[name].items():
            parent = spec.field(fname).reference_to[0]
            if parent in streamed:
                steps.append(_streamed_parent_bound(state, name, fname, bound, parent))
                continue
            bounded: dict[str, tuple[str, ...]] = (
                {name: (fname,), parent: ("Id", "_line")}
                if parent != name
                else {name: (fname, "Id", "_line")}
            )
            steps.append(
                Step("integrity", (name, parent), _cardinality(model, profile, name, fname, bound), bounded)
            )
    return steps


def _each_block(
    state: _State, name: str, columns: tuple[str, ...], each: Callable[[pd.DataFrame], None]
) -> bool:
    """Give `each` the blocks of `name`'s file (its `columns` and `_line`), ROW_CHUNK rows at a time, for a step
    that reads the file itself (`Step.streams`). False when the file cannot be read (some blocks may have been
    given): the object's own reading reports it, and the step then reports nothing, as the whole-org check
    finds nothing without the object."""
    if state.bundle is None:
        return False
    try:
        for block in state.bundle.iter_raw(name, state.data.model.get(name), rows=ROW_CHUNK, columns=columns):
            each(block)
    except BundleError:
        return False
    return True


def _named_rows(state: _State, target: str, frame: pd.DataFrame, fields: list[str]) -> pd.DataFrame | None:
    """The rows of `target` (a STREAMED object) whose Id is among the values of `frame`'s `fields`, in file
    order, with their Id, _line and NAMED_COLUMNS: read from its file a block at a time. What the checks of
    `frame`'s object that read `target` read of it: the existence of the ids its lookups name (`_lookups` asks
    about nothing else), a bound whose minimum is 0 (a parent no child names is within it), and the named
    rows' other fields. None when the file cannot be read: its own reading (its block steps) reports it, and
    the checks reading it find nothing, as when the whole org is read."""
    # each value named, as the named rows' Id: the frame's own string, not another copy of it
    asked: dict[str, str] = {}
    for f in fields:
        for value in frame[f].dropna().tolist():
            asked.setdefault(value, value)
    columns = NAMED_COLUMNS.get(target, ())
    ids: list[str] = []
    kept = {c: PackedColumn() for c in columns}
    lines: list[np.ndarray] = []

    def keep(block: pd.DataFrame) -> None:
        names = block["Id"].tolist()
        hit = np.fromiter(map(asked.__contains__, names), dtype=bool, count=len(names))
        if not hit.any():
            return
        at = np.flatnonzero(hit)
        ids.extend(asked[names[k]] for k in at.tolist())
        part = block.iloc[at]
        for c in columns:
            kept[c].add(part[c].tolist())
        lines.append(part["_line"].to_numpy())

    if not _each_block(state, target, ("Id", *columns), keep):
        return None
    out = _frame(kept, lines) if ids else pd.DataFrame({c: [] for c in (*columns, "_line")}, dtype=object)
    out.insert(0, "Id", np.asarray(ids, dtype=object))
    return out


def _streamed_parent_bound(state: _State, name: str, fname: str, bound: tuple[int, int], parent: str) -> Step:
    """The cardinality step of a bound whose parent is a STREAMED object: the parents `_named_rows` kept
    when the bound allows a parent no child names (a parent only the others can break it), else every
    parent, read from its file a block at a time."""
    low, high = bound
    if low <= 0 <= high:

        def named(fr: Frames) -> list[Finding]:
            frame, parents = fr.get(name), state.named.get((name, parent))
            if frame is None or parents is None:
                return []
            return integrity.bound_findings(name, fname, bound, parent, parents, frame[fname].value_counts())

        return Step("integrity", (name,), named, {name: (fname,)})

    def every(fr: Frames) -> list[Finding]:
        frame = fr.get(name)
        if frame is None:
            return []
        counts = frame[fname].value_counts()
        out: list[Finding] = []

        def check(block: pd.DataFrame) -> None:
            out.extend(integrity.bound_findings(name, fname, bound, parent, block, counts))

        return out if _each_block(state, parent, ("Id",), check) else []

    return Step("integrity", (name, parent), every, {name: (fname,)}, streams=(parent,))


def _id_index(state: _State, name: str, frame: pd.DataFrame) -> pd.Index:
    """`frame`'s distinct ids (`name`'s), as an index, made once for the steps reading a streamed object."""
    if name not in state.indexes:
        state.indexes[name] = pd.Index(frame["Id"].dropna().drop_duplicates().to_numpy(dtype=object))
    return state.indexes[name]


def _streamed_steps(state: _State, spec: ObjectSpec, targets: tuple[str, ...]) -> list[Step]:
    """The integrity steps of a STREAMED object, each fed its blocks (with the block steps before them, from
    one reading of its file): its ids, its lookups, its bounds. Same findings as those of a held object."""
    name, model, profile = spec.name, state.data.model, state.data.profile
    if name in targets:
        raise ValueError(f"{name} is validated a block at a time and cannot be looked up by its own records")

    def lookups(fr: Frames) -> Blocks:
        # every id of the targets held (the blocks ask about any of them): Order's 2.1 M at scale 1,000
        known = {t: set(fr[t]["Id"].dropna().tolist()) for t in targets if t in fr}
        out: list[Finding] = []
        return Blocks(lambda block: out.extend(integrity._lookups(spec, block, model, known)), lambda: out)

    steps = [
        Step("integrity", (name,), None, blocks=lambda fr: _ids_blocks(state, spec)),
        Step("integrity", (name, *targets), None, {t: ("Id",) for t in targets}, blocks=lookups),
    ]
    for fname, bound in (profile.bounds.get(name, {}) if profile is not None else {}).items():
        parent = spec.field(fname).reference_to[0]
        if parent == name or parent in STREAMED:
            raise ValueError(
                f"the bound {name}.{fname} needs {parent} held: it is validated a block at a time"
            )
        steps.append(
            Step(
                "integrity",
                (name, parent),
                None,
                {parent: ("Id", "_line")},
                blocks=_child_bound_blocks(state, name, fname, bound, parent),
            )
        )
    return steps


def _child_bound_blocks(
    state: _State, name: str, fname: str, bound: tuple[int, int], parent: str
) -> Callable[[Frames], Blocks]:
    """A bound of a STREAMED object's lookup: each parent's children counted a block at a time."""

    def start(fr: Frames) -> Blocks:
        parents = fr.get(parent)
        if parents is None:
            return Blocks(lambda block: None, list)
        index = _id_index(state, parent, parents)
        counts = np.zeros(len(index), dtype=np.int64)

        def feed(block: pd.DataFrame) -> None:
            at = index.get_indexer(block[fname].to_numpy(dtype=object))
            counts[:] += np.bincount(at[at >= 0], minlength=len(index))

        def close() -> list[Finding]:
            return integrity.bound_findings(
                name, fname, bound, parent, parents, pd.Series(counts, index=index)
            )

        return Blocks(feed, close)

    return start


def _ids_blocks(state: _State, spec: ObjectSpec) -> Blocks:
    """`integrity._ids` and `integrity._unique` of a STREAMED object, a block at a time: each record's key
    prefix as it comes; for the repeats, a 64-bit hash of each key (the Id, each unique field in lower case,
    the fields unique together) kept per record, 8 bytes, not its string. Only records whose hash another
    record's shares can repeat a key; they are read again, and the repeats among them are exactly those
    among all (every record sharing a key shares its hash, and they keep their order)."""
    unique = [f.name for f in spec.fields if f.type != "id" and (f.unique or f.external_id)]
    together = list(integrity.UNIQUE_TOGETHER.get(spec.name, ((), ""))[0])

    def keys(block: pd.DataFrame) -> list[pd.Series]:
        out = [block["Id"], *(block[f].str.lower() for f in unique)]
        if together and all(c in block.columns for c in together):
            out.append(block[together[0]].str.cat([block[c] for c in together[1:]], sep="\x1f"))
        return out

    hashes: list[list[np.ndarray]] = []  # per key, per block: each record's hash
    present: list[list[np.ndarray]] = []  # and whether it has the key
    prefixes: list[Finding] = []

    def feed(block: pd.DataFrame) -> None:
        prefixes.extend(integrity._key_prefixes(spec, block))
        for k, key in enumerate(keys(block)):
            if k == len(hashes):
                hashes.append([])
                present.append([])
            hashes[k].append(pd.util.hash_array(key.to_numpy(dtype=object)))
            present[k].append(key.notna().to_numpy())

    def close() -> list[Finding]:
        candidate: np.ndarray | None = None
        for h, there in zip(hashes, present, strict=True):
            repeats = _repeated(np.concatenate(h), np.concatenate(there))
            h.clear()
            there.clear()
            candidate = repeats if candidate is None else candidate | repeats
        if candidate is None or not candidate.any():
            return prefixes
        rows = _rows_at(state, spec, candidate, ("Id", *unique, *together))
        return [*prefixes, *integrity._duplicate_ids(spec, rows), *integrity._unique(spec, rows)]

    return Blocks(feed, close)


def _repeated(h: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Whether each value of `h` where `present` holds occurs more than once there."""
    at = np.flatnonzero(present)
    order = np.argsort(h[at], kind="stable")
    s = h[at][order]
    same = s[1:] == s[:-1]
    twice = np.zeros(len(at), dtype=bool)
    twice[1:] |= same
    twice[:-1] |= same
    out = np.zeros(len(h), dtype=bool)
    out[at[order]] = twice
    return out


def _rows_at(state: _State, spec: ObjectSpec, at: np.ndarray, columns: tuple[str, ...]) -> pd.DataFrame:
    """The rows of `spec`'s file where `at` (a mask over all of them) holds, read again a block at a time."""
    assert state.bundle is not None
    parts, lo = [], 0
    for block in state.bundle.iter_raw(spec.name, spec, rows=ROW_CHUNK, columns=columns):
        parts.append(block[at[lo : lo + len(block)]])
        lo += len(block)
    if lo != len(at):
        raise BundleError(
            f"{state.data.data_file(spec.name)} changed while it was validated ({len(at)} rows, then {lo}); "
            "validate the bundle again once nothing writes it."
        )
    return pd.concat(parts, ignore_index=True)


class _Changed(Exception):
    """An object's file gave another number of rows, or lost its field, between two readings."""


class FileTexts(Sequence[str | None]):
    """One text field of an object's file, as a sequence read in order a block of ROW_CHUNK rows at a time: what
    the near-duplicate index reads of its texts (twice, first to last row) without holding them all. Its
    length is counted by a first reading. Reading a row before the block held starts a new reading; a reading
    that ends early or lacks the field raises `_Changed`, and so does `check_ended` when the reading under way
    goes on past the counted rows; an unreadable file raises the reader's BundleError."""

    def __init__(self, bundle: Bundle, name: str, field: str) -> None:
        self.bundle, self.name, self.field = bundle, name, field
        self._n = sum(len(b) for b in self._blocks())
        self._reading: Iterator[list[str | None]] = iter(())
        self._block: list[str | None] = []
        self._lo = self._n  # (no block held: the next row read starts a reading)

    def _blocks(self) -> Iterator[list[str | None]]:
        for block in self.bundle.iter_columns(self.name, [self.field], rows=ROW_CHUNK):
            if self.field not in block.columns:
                raise _Changed(self.name)
            yield block[self.field].tolist()

    def __len__(self) -> int:
        return self._n

    def check_ended(self) -> None:
        """After a reading of every row (the index's second): raise `_Changed` if the file holds more rows than
        were counted (the last block, or another after it)."""
        if self._lo + len(self._block) > self._n or next(self._reading, None) is not None:
            raise _Changed(self.name)

    @overload
    def __getitem__(self, i: int) -> str | None: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[str | None]: ...

    def __getitem__(self, i: int | slice) -> str | Sequence[str | None] | None:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._n))]
        if not 0 <= i < self._n:
            raise IndexError(i)
        if i < self._lo:
            self._reading, self._block, self._lo = self._blocks(), [], 0
        while i >= self._lo + len(self._block):
            self._lo += len(self._block)
            self._block = next(self._reading, [])
            if not self._block:
                raise _Changed(self.name)
        return self._block[i - self._lo]


def _near_duplicates(state: _State, spec: ObjectSpec, fields: tuple[str, ...]) -> list[Finding]:
    """`text.near_duplicates` of `fields` of `spec`'s records, read from the file: each field's texts read a
    block at a time as the search's index reads them (`FileTexts`), and only when a pair is found read again
    with the records' ids and lines. A file that cannot be read gives nothing here: the object's first reading
    (its block steps, next) reports it, once.

    Why not gather the texts first: the index is built from them and the search then reads only the index, so
    holding them through the search held ~300 MB of Case's descriptions at scale 1,000 for nothing."""
    bundle = state.bundle
    if bundle is None or not state.data.model.has(spec.name):
        return []
    pairs: dict[str, list[tuple[int, int, float]]] = {}
    try:
        for f in fields:
            read = FileTexts(bundle, spec.name, f)
            pairs[f] = text.near_duplicate_pairs(read)
            read.check_ended()
            del read
        if not any(pairs.values()):
            return []
        texts: dict[str, list[str | None]] = {f: [] for f in fields}
        for block in bundle.iter_columns(spec.name, list(fields), rows=ROW_CHUNK):
            if any(f not in block.columns for f in fields):
                return []
            for f in fields:
                texts[f].extend(block[f].tolist())
        where = bundle.read_raw(spec.name, spec, ("Id",))
    except (BundleError, _Changed):
        return []
    if any(len(where) != len(t) for t in texts.values()):
        return []  # the file changed between the readings: its next reading reports what it holds
    frame = where.assign(**{f: np.asarray(t, dtype=object) for f, t in texts.items()})
    return text.near_duplicates({spec.name: frame}, pairs={(spec.name, f): p for f, p in pairs.items()})


def _known_ids(ids: pd.Series, frame: pd.DataFrame, spec: ObjectSpec, target: str) -> set[str]:
    """The ids of `target` that `_lookups` may ask about: all of them, or, when the target has more rows than
    the object looking it up, only those among the values of the object's lookups (`_lookups` asks the set
    about those values and nothing else, so its findings are the same). Case's lookups at scale 1,000: the
    977 k order items the cases name, not a set of all 7.1 M ids (~330 MB, with the list it was made from)."""
    if len(ids) <= len(frame):
        return set(ids.dropna().tolist())
    # (`target` is named by one of the lookups at least; the step reads all of them)
    fields = [f.name for f in spec.lookups if target in f.reference_to]
    asked = frame[fields[0]] if len(fields) == 1 else pd.concat([frame[f] for f in fields], ignore_index=True)
    # a hash table of the values asked about, probed with every id: a boolean per id, not a set of them all
    return set(ids[ids.isin(asked.dropna()).to_numpy()].tolist())


def _cols(*names: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


ROW_CHUNK = 16_384  # rows the per-record checks (JSON Schema, text) read at a time


def _text_blocks(name: str, data: BundleData) -> Blocks:
    """The per-record text checks of `check_text` (present and whole, control characters, doubled
    determiners, articles before plurals, zero prices), a block of rows at a time. Each finding is about one
    record, so the findings are the same; the checks' screening scans join a block's texts, not the
    object's. `_controls` reports the first CONTROL_LIMIT rows of a column: the blocks' findings are cut to
    the first CONTROL_LIMIT per column."""
    out: list[Finding] = []
    shown: dict[tuple[str | None, str | None], int] = {}

    def feed(block: pd.DataFrame) -> None:
        part = {name: block}
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

    return Blocks(feed, lambda: out)


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

    def with_items(fr: Frames) -> Frames:
        # the order items the cases name (OrderItem is streamed: `_named_rows`), where the checks look for them
        items = state.named.get(("Case", "OrderItem"))
        return fr if items is None else {**fr, "OrderItem": items}

    def products(fr: Frames) -> list[Finding]:
        # the cases' texts read from the file a block at a time: Case's held frame keeps none of them (at scale
        # 1,000, ~0.3 GB held from Case's first reading to here, as the second process's validation overlapped
        # the building process's task building, the tree's peak)
        items = state.named.get(("Case", "OrderItem"))
        if items is None or "Product2" not in fr:
            return []  # (as `_products` without OrderItem or Product2)
        item_product = rules.by_id(items, "Product2Id")
        names = rules.by_id(fr["Product2"], "Name")
        out: list[Finding] = []

        def check(block: pd.DataFrame) -> None:
            out.extend(text.case_products(block, item_product, names))

        columns = ("Id", "Subject", "Description", "OrderItemId__c")
        return out if _each_block(state, "Case", columns, check) else []

    def order_items(fr: Frames) -> Blocks:
        # each order item against its entry and its order's book, and which orders have one, as OrderItem is read
        orders, entries = fr.get("Order"), fr.get("PricebookEntry")
        state.has_items = None
        if orders is None:
            return Blocks(lambda block: None, list)
        index = _id_index(state, "Order", orders)
        seen = np.zeros(len(index), dtype=bool)
        own = rules._Emit()  # its own: a check dropped unclosed leaves no finding behind
        looked_up = rules.item_lookups(entries, orders) if entries is not None else None

        def feed(block: pd.DataFrame) -> None:
            at = index.get_indexer(block["OrderId"].to_numpy(dtype=object))
            seen[at[at >= 0]] = True
            if looked_up is not None:
                rules._order_item_slice(block, *looked_up, own)

        def close() -> list[Finding]:
            at = index.get_indexer(orders["Id"].to_numpy(dtype=object))
            state.has_items = (at >= 0) & seen[np.maximum(at, 0)]
            return own.out

        return Blocks(feed, close)

    def orders(fr: Frames) -> list[Finding]:
        # the price books and orders; the items were checked as they were read (`order_items`)
        state.indexes.clear()
        has_items, state.has_items = state.has_items, None
        rules._orders(fr, emit, has_items=has_items)
        return []

    def case_customer(fr: Frames) -> list[Finding]:
        if state.cases is not None:
            rules._case_customer(with_items(fr), state.cases, emit)
        state.named.pop(("Case", "OrderItem"), None)
        return []

    def chat_customer(fr: Frames) -> list[Finding]:
        if state.cases is not None:
            rules._chat_customer(fr, state.cases, emit)
        return []

    def release_cases(fr: Frames) -> list[Finding]:
        state.cases = None
        state.offers.clear()
        state.case_issues = None
        state.named.clear()
        state.indexes.clear()
        return []

    def message_offers(name: str) -> Callable[[Frames], Blocks]:
        # the messages and their texts' offers, worked out as the object is read, so that the offers step
        # holds neither its texts nor its frame (`_offers` returns early without the policies, the cases or
        # the issues)
        def start(fr: Frames) -> Blocks:
            if data.policies is None or "Case" not in fr or "Issue__c" not in fr:
                return Blocks(lambda block: None, list)
            if state.case_issues is None:  # one for the chats and the emails
                state.case_issues = text.CaseIssues.of(fr["Case"], fr["Issue__c"])
            got = text.MessageOffers.start(name, data, state.case_issues)

            def close() -> list[Finding]:
                state.offers[name] = got
                return []

            return Blocks(got.feed, close)

        return start

    def emails(fr: Frames) -> Blocks:
        # each email against its case's lifetime as the emails are read (at scale 300, their ids, cases and
        # dates were ~190 MB held from their first reading to this step)
        cases = state.cases
        if cases is None:
            return Blocks(lambda block: None, list)
        spans = rules.CaseSpans(cases)
        own = rules._Emit()  # its own: a check dropped unclosed leaves no finding behind
        return Blocks(lambda block: rules._emails(block, cases, own, spans), lambda: own.out)

    def history(fr: Frames) -> Blocks:
        # the history's rows as the rules read them (numbers: `rules.HistoryRows`), gathered as its file is
        # read; the few rows reported are read again (at scale 300, its 1 M rows were ~170 MB held as strings,
        # and the step rose ~190 MB above them)
        cases = state.cases
        if cases is None:
            return Blocks(lambda block: None, list)
        got = rules.HistoryRows(rules.CaseSpans(cases))
        own = rules._Emit()  # its own: a check dropped unclosed leaves no finding behind

        def fetch(at: np.ndarray) -> pd.DataFrame:
            mask = np.zeros(len(got.column("case")), dtype=bool)
            mask[at] = True
            return _rows_at(state, model.get("CaseHistory__c"), mask, rules.HISTORY_COLUMNS)

        def close() -> list[Finding]:
            rules.history_findings(got, cases, own, fetch)
            return own.out

        return Blocks(got.feed, close)

    def offers(fr: Frames) -> list[Finding]:
        try:
            return text._offers(replace(data, raw=fr), state.offers)
        finally:  # the last step to read them: not held through the history's steps
            state.offers.clear()
            state.case_issues = None

    for name in large:
        own = _per_object(state, name)
        if name in text.MESSAGES:
            # (among the object's block steps: a STREAMED object has no other)
            first_whole = next(
                (i for i, step in enumerate(own) if step.blocks is None and not step.own_read), len(own)
            )
            own.insert(
                first_whole,
                Step(
                    "text",
                    (name, "Case", "Issue__c"),
                    None,
                    {"Case": ("Id", "IssueId__c"), "Issue__c": ("Id", "Name")},
                    blocks=message_offers(name),
                ),
            )
        steps.extend(own)
        if name == "OrderItem":
            # the items against their entries and orders, fed OrderItem's blocks with its own block steps
            steps.append(
                Step(
                    "rules",
                    ("OrderItem", "PricebookEntry", "Order"),
                    None,
                    {
                        "PricebookEntry": ("Id", "Pricebook2Id", "Product2Id", "UnitPrice"),
                        "Order": ("Id", "Pricebook2Id"),
                    },
                    blocks=order_items,
                )
            )
            steps.append(
                Step(
                    "rules",
                    ("Pricebook2", "PricebookEntry", "Order", "Product2"),
                    orders,
                    # what `rules._orders` reads of them
                    {
                        "Pricebook2": ("Id", "_line", "IsStandard", "ValidFrom", "ValidTo"),
                        "PricebookEntry": ("Id", "_line", "Pricebook2Id", "Product2Id", "UnitPrice"),
                        "Order": ("Id", "_line", "Status", "EffectiveDate", "Pricebook2Id"),
                        "Product2": ("Id", "_line", "Name"),
                    },
                )
            )
            # the cases against their orders' customers and dates: the last step to read the orders, which are
            # let go before the chats and emails are read (at scale 300 they were ~230 MB of the chats' steps)
            steps.append(
                Step(
                    "rules",
                    ("Contact", "Order"),
                    case_customer,
                    {"Contact": ("Id", "AccountId"), "Order": ("Id", "AccountId", "EffectiveDate")},
                )
            )
        elif name == "Case":
            steps.append(Step("rules", ("Case",), cases, {"Case": CASE_STATE}))
            steps.append(
                Step("text", ("Case", "Product2"), products, {"Product2": ("Id", "Name")}, streams=("Case",))
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
            steps.append(
                with_cases(
                    name, rules._chats, ("Id", "_line", "CaseId", "StartTime", "EndTime", "ChatDuration")
                )
            )
        elif name == "EmailMessage":
            steps.append(Step("rules", (name,), None, blocks=emails))
            steps.append(
                Step(
                    "text",
                    ("Case", "Issue__c"),
                    offers,
                    {"Case": ("Id", "_line", "IssueId__c"), "Issue__c": ("Id", "Name")},
                    latent=("Case", "EmailMessage", "Issue__c"),
                )
            )
        elif name == "CaseHistory__c":
            steps.append(Step("rules", (name,), None, blocks=history))
    # the articles against their latent kinds and the policies: after the objects' own steps, which can then
    # run before the latent tables are read (StagedRun.advance)
    steps.append(
        Step(
            "text",
            ("Knowledge__kav",),
            lambda fr: text._policies(replace(data, raw=fr)),
            latent=("Knowledge__kav",),
        )
    )
    steps.append(Step("rules", (), release_cases))
    return steps


def _reads_after(steps: list[Step]) -> list[dict[str, set[str] | None]]:
    """For each step, the objects the steps after it read from their held frames, with the columns they read
    (None: every column). A block step reads its object from the file, not from a held frame."""
    out: list[dict[str, set[str] | None]] = [{} for _ in steps]
    wanted: dict[str, set[str] | None] = {}
    for i in range(len(steps) - 1, -1, -1):
        out[i] = {n: (None if c is None else set(c)) for n, c in wanted.items()}
        for name, reads in _held_reads(steps[i]).items():
            if reads is None:
                wanted[name] = None
            elif name not in wanted:
                wanted[name] = set(reads)
            elif (have := wanted[name]) is not None:
                have.update(reads)
    return out


def _held_reads(step: Step) -> dict[str, set[str] | None]:
    """The objects `step` reads from their held frames, with the columns it reads (None: every column)."""
    held = step.needs[1:] if step.blocks is not None or step.own_read else step.needs
    return {n: (set(step.columns[n]) if n in step.columns else None) for n in held if n not in step.streams}


def _union(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    return None if a is None or b is None else a | b


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
    `finish`, once the manifest is read; so do the steps after it. A latent table the run's data does not
    hold yet is read when the first step naming it runs, and let go after the last (read with the manifest,
    latent/EmailMessage.csv's 3.2 M ids at scale 1,000 were held through the order steps). The consecutive
    block steps of an object run together, from one reading of its file."""

    def __init__(self, data: BundleData, bundle: Bundle) -> None:
        self.data, self.bundle = data, bundle
        self.state = _State(data, bundle)
        self.steps = plan(self.state)
        self.last: dict[str, int] = {}
        for i, step in enumerate(self.steps):
            for name in step.needs[1:] if step.own_read else step.needs:
                if name not in step.streams:
                    self.last[name] = i
        self.after = _reads_after(self.steps)
        self.latent_last: dict[str, int] = {}  # a latent table → the last step reading it
        for i, step in enumerate(self.steps):
            for name in step.latent:
                self.latent_last[name] = i
        self.latent_own: set[str] = set()  # the latent tables this run read, which it lets go
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
        """Run the next step (with the block steps after it that read the same object) if it reads only
        objects in `written` (whose files are complete) and no latent table; whether it ran."""
        if self.done >= len(self.steps):
            return False
        group = self.steps[self.done : self._group_end(self.done)]
        needs = {n for step in group for n in step.needs}
        if any(step.latent for step in group) or not all(
            n in written or not self.data.model.has(n) for n in needs
        ):
            return False
        self._run(self.done)
        return True

    def finish(self) -> Outcome:
        """Run the steps left, read the objects no step read (so a broken CSV is still reported) and gather
        the outcome."""
        while self.done < len(self.steps):
            self._run(self.done)
        data, bundle = self.data, self.bundle
        # the latent tables no step read, so that an unreadable one is still reported
        for name in read_latent(data):
            del data.latent[name]
        for spec in data.model:
            if spec.name not in self.attempted:
                self.attempted.add(spec.name)
                frame = read_object(data, bundle, spec, columns=())
                if frame is not None:
                    self.objects[spec.name] = len(frame)
        self.findings.extend(self.state.emit.out)
        return Outcome(
            findings=self.findings,
            objects={spec.name: self.objects[spec.name] for spec in data.model if spec.name in self.objects},
            timings={k: round(v, 4) for k, v in self.timings.items()},
        )

    def _group_end(self, i: int) -> int:
        """The step after step `i` and the block steps right after it reading the same object (i + 1 when
        step `i` is not a block step)."""
        step = self.steps[i]
        j = i + 1
        if step.blocks is not None:
            while (
                j < len(self.steps)
                and self.steps[j].blocks is not None
                and self.steps[j].needs[0] == step.needs[0]
            ):
                j += 1
        return j

    def _load(self, name: str, i: int) -> None:
        """Read `name` for step `i` if no step read it yet: only the columns step `i` and the steps after it
        read from its held frame."""
        data = self.data
        if name in self.attempted or not data.model.has(name):
            return
        self.attempted.add(name)
        reads = _union(_held_reads(self.steps[i]).get(name, set()), self.after[i].get(name, set()))
        t = time.perf_counter()
        frame = read_object(data, self.bundle, data.model.get(name), None if reads is None else sorted(reads))
        self.timings["load"] += time.perf_counter() - t
        if frame is not None:
            self.frames[name] = frame
            self.objects[name] = len(frame)

    def _run(self, i: int) -> None:
        frames, step = self.frames, self.steps[i]
        end = self._group_end(i)
        if step.blocks is not None:
            for k in range(i, end):
                for name in self.steps[k].needs[1:]:
                    self._load(name, k)
            self._run_blocks(i, end)
        else:
            assert step.run is not None
            for name in step.needs[1:] if step.own_read else step.needs:
                if name not in step.streams:
                    self._load(name, i)
            t = time.perf_counter()
            self.latent_own.update(read_latent(self.data, step.latent))
            self.timings["load"] += time.perf_counter() - t
            t = time.perf_counter()
            self.findings.extend(step.run({n: frames[n] for n in step.needs if n in frames}))
            self.timings[step.family] += time.perf_counter() - t
        let_go = [n for n in step.latent if self.latent_last[n] == i and n in self.latent_own]
        for name in let_go:
            self.latent_own.discard(name)
            self.data.latent.pop(name, None)
        last = end - 1
        done = [n for n in frames if self.last.get(n, -1) <= last]
        for name in done:
            del frames[name]
        narrowed = []
        for name, columns in self.after[last].items():
            frame = frames.get(name)
            if frame is None or columns is None:
                continue
            kept = [c for c in frame.columns if c in columns]
            if len(kept) < len(frame.columns):
                frames[name] = frame[kept]
                narrowed.append(name)
        if let_go or any(self.objects.get(n, 0) >= LARGE_ROWS for n in (*done, *narrowed, *step.needs[:1])):
            release_freed_memory()
        self.done = end

    def _run_blocks(self, i: int, end: int) -> None:
        """Steps `i` to `end` (block steps of one object): one reading of its file, a block of ROW_CHUNK rows
        at a time, fed to each; the columns the steps after them read are kept as its held frame when no
        step read it before. A held frame with every column is read from, not the file."""
        data, frames = self.data, self.frames
        name = self.steps[i].needs[0]
        if not data.model.has(name) or (name in self.attempted and name not in frames):
            return  # unreadable: a check that needs it finds nothing, as when the whole org is read
        spec = data.model.get(name)
        group = self.steps[i:end]
        checks = []
        for step in group:
            assert step.blocks is not None
            checks.append(step.blocks({n: frames[n] for n in step.needs[1:] if n in frames}))
        held = frames.get(name)
        keep: set[str] | None = set()
        if name not in self.attempted:
            self.attempted.add(name)
            keep = self.after[end - 1].get(name, set())
        if held is not None and len(held.columns) == len(spec.field_names) + 1:
            blocks: Iterator[pd.DataFrame] = (
                held.iloc[lo : lo + ROW_CHUNK] for lo in range(0, len(held), ROW_CHUNK)
            )
        else:
            blocks = self.bundle.iter_raw(name, spec, rows=ROW_CHUNK, compact=())
        kept: dict[str, PackedColumn] = {}
        lines: list[np.ndarray] = []
        rows = 0
        t = time.perf_counter()
        try:
            for block in blocks:
                self.timings["load"] += time.perf_counter() - t
                rows += len(block)
                for step, check in zip(group, checks, strict=True):
                    t = time.perf_counter()
                    check.feed(block)
                    self.timings[step.family] += time.perf_counter() - t
                if keep != set():
                    for c in block.columns if keep is None else [c for c in block.columns if c in keep]:
                        if c == "_line":
                            lines.append(block[c].to_numpy())
                        else:
                            kept.setdefault(c, PackedColumn()).add(block[c].tolist())
                t = time.perf_counter()
            self.timings["load"] += time.perf_counter() - t
        except BundleError as exc:
            unreadable(data, spec, exc)
            return
        for step, check in zip(group, checks, strict=True):
            t = time.perf_counter()
            self.findings.extend(check.close())
            self.timings[step.family] += time.perf_counter() - t
        if held is None:
            self.objects[name] = rows
            if keep != set():
                if rows:
                    frames[name] = _frame(kept, lines)
                else:  # no block: the header gives the columns
                    got = read_object(data, self.bundle, spec, None if keep is None else sorted(keep))
                    if got is not None:
                        frames[name] = got


def _frame(columns: dict[str, PackedColumn], lines: list[np.ndarray]) -> pd.DataFrame:
    """A frame of the packed columns (object columns, as `read_raw` makes them: pandas would infer a string
    dtype, with NaN for None), each made and let go in turn, and the lines (`_line`, the last column)."""
    # each column its own block, not copied into one block beside them (`read_csv_lines` does the same)
    frame = pd.DataFrame({c: columns.pop(c).array() for c in list(columns)}, dtype=object, copy=False)
    if lines:
        frame["_line"] = np.concatenate(lines)
        lines.clear()
    return frame


def run_checks(data: BundleData, bundle: Bundle) -> Outcome:
    """Every check of `check_schema`, `check_integrity`, `check_rules` and `check_text` on the bundle that
    `data` describes (read without its objects), reading each object when a step first needs it and letting
    it go after the last. Objects whose CSV cannot be read become `bundle.csv` findings in `data.problems`."""
    return StagedRun(data, bundle).finish()
