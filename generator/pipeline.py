"""The build pipeline as plain library code (no prefect).

For each object, in generation order: run its blocks (split over shards), assemble them in block order
and assign ids, write its text (requests split over shards), then persist the frame. An *executor*
decides where shard jobs run: `LocalExecutor` here (in-process), a Prefect task runner in `flows/` (threads
or Dask processes). Shard jobs are small picklable records; a worker process that lacks the run's context
rebuilds it from the profile and the frames already persisted in the bundle's work folder, so the same
job gives the same result wherever it runs.
"""

from __future__ import annotations

import asyncio
import math
import shutil
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, cast, overload

import numpy as np
import pandas as pd

from generator.apart import in_child
from generator.frames import StoredFrame, save_frame
from generator.objects import GENERATORS, BuildContext, BuildError
from generator.objects.base import RELEASE_ROWS, share_repeated_strings
from generator.objects.fields import RuleFields
from generator.spill import ShardSpiller, SpilledShard, SpilledTexts, TextFill
from generator.text.base import LANDS_IN, TextRequest, TextWriter
from generator.text.writers import make_writer
from generator.world import build_world
from schemas.gcpause import gc_paused, release_freed_memory
from schemas.graph import LoadPlan, load_plan
from schemas.model import OrgModel, load_model
from schemas.profile import Profile, load_profile
from schemas.rules import needs
from schemas.textsim import NearDuplicateIndex

T = TypeVar("T")
Stage = Literal["structured", "text"]
WORK_DIR = ".work"


def generation_plan(model: OrgModel) -> LoadPlan:
    """The model's load plan (schemas/graph.py, with its cycle policy) plus the generators' extra (non-lookup)
    dependencies; only lookups filled by a rule may be deferred, since generator code reads its parents."""
    missing = [o.name for o in model if o.name not in GENERATORS]
    if missing:
        raise BuildError(
            f"The org model has `{missing[0]}` but no generator produces it. Add a generator in "
            "generator/objects/ and register it in GENERATORS."
        )
    after = {o.name: [dep for dep in GENERATORS[o.name].after if model.has(dep)] for o in model}
    return load_plan(model, after=after, deferrable=lambda f: f.rule is not None)


def frames_read(model: OrgModel, sobject: str, earlier: Sequence[str]) -> set[str]:
    """The other objects' frames generating `sobject` may read: what its generator declares (`reads`; all of
    `earlier` when it declares nothing), its `after`, its lookups' targets, and the columns its rule fields
    read (schemas/rules.py `needs`)."""
    gen = GENERATORS[sobject]
    spec = model.get(sobject)
    out = set(earlier if gen.reads is None else gen.reads) | set(gen.after)
    out |= {t for f in spec.lookups for t in f.reference_to}
    out |= {h.sobject for f in spec.rule_fields for h in needs(model, sobject, f)}
    out.discard(sobject)
    return out


def generation_order(model: OrgModel) -> list[str]:
    """The order objects are generated in: `generation_plan(model).order`."""
    return list(generation_plan(model).order)


@dataclass(frozen=True)
class RunSpec:
    """What identifies a build's data: the same RunSpec gives byte-identical data files."""

    profile: str
    seed: int
    scale: float
    writer: str = "offline"
    writer_options: tuple[tuple[str, Any], ...] = ()

    def key(self) -> tuple[Any, ...]:
        return (self.profile, self.seed, self.scale, self.writer, self.writer_options)


@dataclass(frozen=True)
class ShardJob:
    """One unit of work for an executor: a stage of one object over a slice of its blocks or requests."""

    root: str
    run: RunSpec
    sobject: str
    stage: Stage
    shard: int
    shards: int


def shard_slice(n: int, shard: int, shards: int) -> range:
    """Contiguous slice `shard` of `shards` over n units."""
    lo = math.floor(n * shard / shards)
    hi = math.floor(n * (shard + 1) / shards)
    return range(lo, hi)


# -- the run context ----------------------------------------------------------------------------------------


def make_context(run: RunSpec, model: OrgModel | None = None, profile: Profile | None = None) -> BuildContext:
    model = model or load_model()
    profile = profile or load_profile(run.profile, model)
    world = build_world(profile, run.seed, run.scale)
    return BuildContext(model=model, profile=profile, world=world, seed=run.seed, scale=run.scale)


@dataclass
class RunContext:
    """One run in one process, passed explicitly to everything that works for it: where it writes, what
    identifies it (`run`), its world and frames (`build`), the text requests being written, and its writer
    (made on first use by the registered writer class; shard threads share it, so they share its limits and
    cache)."""

    root: Path
    run: RunSpec
    build: BuildContext
    text_requests: dict[str, list[TextRequest]] = field(default_factory=dict)
    _writer: TextWriter | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _loaded_for: tuple[str, Stage] | None = field(default=None, repr=False)

    def writer(self) -> TextWriter:
        with self._lock:
            if self._writer is None:
                self._writer = make_writer(self.run, self.build.profile)
            return self._writer

    def forget_memos(self) -> None:
        """The writer's memos go (`TextWriter.forget_memos`), if a writer was made."""
        with self._lock:
            writer = self._writer
        if writer is not None:
            writer.forget_memos()

    async def aclose(self) -> None:
        """Release the writer (clients, threads, cache connections), if one was made."""
        writer, self._writer = self._writer, None
        if writer is not None:
            await writer.aclose()

    def load_frames(self, sobject: str, stage: Stage = "structured") -> None:
        """Hold the frames generating `sobject` reads, as stored in the run's work folder (a worker process that
        did not make them), and only those. They are `StoredFrame`s (generator/frames.py), read column by
        column and part by part as the generator asks: a worker's memory is bounded by the columns one object
        reads and the parts of its own rows, not by its parents' whole frames. When the worker moves on to
        another object or stage, the frames it keeps forget the columns read so far (the next stage reads
        what it uses)."""
        if self._loaded_for != (sobject, stage):
            self._loaded_for = (sobject, stage)
            _forget_stored(self.build.frames)
        order = generation_order(self.build.model)
        earlier = order[: order.index(sobject)]
        wanted = frames_read(self.build.model, sobject, earlier) & set(earlier)
        for name in [n for n in self.build.frames if n not in wanted and n != f"{sobject}:structured"]:
            del self.build.frames[name]
        work = self.root / WORK_DIR
        for name in earlier:
            if name in wanted and name not in self.build.frames:
                # duck-typed: StoredFrame answers the DataFrame operations the generators use on what they read
                self.build.frames[name] = cast(pd.DataFrame, StoredFrame(work / name))

    def requests_for(self, sobject: str) -> list[TextRequest]:
        reqs = self.text_requests.get(sobject)
        if reqs is None:
            reqs = GENERATORS[sobject].text_requests(self.build, self.build.frames[sobject + ":structured"])
            self.text_requests[sobject] = reqs
        return reqs


def _forget_stored(frames: dict[str, pd.DataFrame]) -> None:
    """Let the stored frames among `frames` forget the columns and parts read so far (`StoredFrame.forget`)."""
    for held in frames.values():
        if isinstance(held, StoredFrame):
            held.forget()


@lru_cache(maxsize=4)
def worker_context(root: str, run: RunSpec) -> RunContext:
    """The run's context in a worker process (Dask) that receives only shard jobs: rebuilt once per process
    from the profile and the frames persisted in the work folder (a per-process memo of a pure function)."""
    return RunContext(Path(root), run, make_context(run))


def run_structured_shard(job: ShardJob, rc: RunContext) -> list[tuple[int, pd.DataFrame]]:
    gen = GENERATORS[job.sobject]
    blocks = gen.n_blocks(rc.build)
    with gc_paused():
        return [
            (b, share_repeated_strings(gen.block(rc.build, b)))
            for b in shard_slice(blocks, job.shard, job.shards)
        ]


# requests made and written at a time within a text shard, where the generator makes them a slice at a time:
# only these and the texts written so far are held, not every request of the shard at once
TEXT_CHUNK = 8192


def shard_request_chunks(job: ShardJob, rc: RunContext) -> Iterator[list[TextRequest]]:
    """The text requests of a text shard, in order, a chunk at a time. Where the generator can make a slice of
    them (`text_request_count`), made from the object's structured frame (stored, in a worker) TEXT_CHUNK rows at
    a time; in a worker otherwise, all of them made once and sliced; in the building process, a slice of those
    it already made."""
    ctx = rc.build
    gen = GENERATORS[job.sobject]
    key = job.sobject + ":structured"
    reqs = rc.text_requests.get(job.sobject)
    if reqs is None and key not in ctx.frames:
        ctx.frames[key] = cast(pd.DataFrame, StoredFrame(rc.root / WORK_DIR / f"{job.sobject}.structured"))
    frame = ctx.frames[key] if reqs is None else None
    if frame is not None:
        count = gen.text_request_count(ctx, frame)
        if count is not None:
            rows = shard_slice(count, job.shard, job.shards)
            for lo in range(rows.start, rows.stop, TEXT_CHUNK):
                yield gen.text_requests_for(ctx, frame, lo, min(rows.stop, lo + TEXT_CHUNK))
            return
        if isinstance(frame, StoredFrame):
            ctx.frames[key] = frame.to_pandas()
    reqs = rc.requests_for(job.sobject)
    yield [reqs[i] for i in shard_slice(len(reqs), job.shard, job.shards)]


def shard_requests(job: ShardJob, rc: RunContext) -> list[TextRequest]:
    """All the text requests of a text shard (`shard_request_chunks`, joined)."""
    return [r for chunk in shard_request_chunks(job, rc) for r in chunk]


async def run_text_shard(job: ShardJob, rc: RunContext) -> list[Any] | SpilledShard:
    """The texts of a shard's requests, in order, written a chunk of requests at a time (a request's text
    depends on that request alone, so chunking changes no text), each chunk's kept as the object's generator
    holds them (`held_texts`), or, for a generator that `spills_texts`, written to the work folder as they come
    (generator/spill.py): the shard then returns where they are."""
    gen = GENERATORS[job.sobject]
    assert gen.text_kind is not None
    results: list[Any] = []
    spiller = None
    if gen.spills_texts:
        name = f"{job.sobject}.texts-{job.shard:05d}-of-{job.shards:05d}"
        spiller = ShardSpiller(rc.root / WORK_DIR, name, _text_fields(gen))
    try:
        for part in shard_request_chunks(job, rc):
            if not part:
                continue
            writer = rc.writer()
            got = await writer.write(gen.text_kind, part)
            if len(got) != len(part):
                raise BuildError(
                    f"The {writer.name} writer returned {len(got)} texts for {len(part)} {job.sobject} requests; "
                    "no record may be dropped."
                )
            if spiller is not None:
                spiller.add(gen.held_texts(got), [req.key for req in part])
            else:
                results.extend(gen.held_texts(got))
            del part, got
    except BaseException:
        if spiller is not None:
            spiller.abandon()
        raise
    return results if spiller is None else spiller.close()


def run_shard_sync(job: ShardJob, rc: RunContext | None = None) -> Any:
    """Entry point for task runners: runs one job to completion, in the given context (threads of the
    building process) or in this worker process's own (`worker_context`)."""
    if rc is None:
        rc = worker_context(job.root, job.run)
        rc.load_frames(job.sobject, job.stage)
    if job.stage == "structured":
        return run_structured_shard(job, rc)
    return asyncio.run(run_text_shard(job, rc))


# -- executors --------------------------------------------------------------------------------------------


class Executor(Protocol):
    async def run(self, rc: RunContext, jobs: Sequence[ShardJob]) -> list[Any]:
        """Run the jobs (possibly in parallel) for the run `rc`; results in job order."""


class LocalExecutor:
    """Runs every job in this process; text shards run concurrently on the event loop."""

    async def run(self, rc: RunContext, jobs: Sequence[ShardJob]) -> list[Any]:
        if not jobs:
            return []
        if jobs[0].stage == "structured":
            return [run_structured_shard(j, rc) for j in jobs]
        # Each shard's texts come back in a box emptied here. The future `gather` returns them through stays
        # referenced by the event loop's wake-up handle until this process next yields to the loop, which the
        # object's text steps, near-duplicate rounds and CSV write never do: it held the texts that long.
        boxes = await asyncio.gather(*(boxed(run_text_shard(j, rc)) for j in jobs))
        return [box.pop() for box in boxes]


async def boxed(work: Awaitable[T]) -> list[T]:
    """`work`'s result in a one-item list, for a caller that takes it out (`LocalExecutor.run`)."""
    return [await work]


class RequestsOnDemand(Sequence[TextRequest]):
    """The text requests of an object whose generator makes them a slice at a time (`text_request_count`),
    made when asked for from its structured frame: the text shards make their own (`shard_request_chunks`),
    and the building process needs only those of the rows it rewrites (a scale-1,000 Case holds ~1 GB of
    requests made all at once), made by row (`at`, for a `requests_per_row` object), or all of them a slice
    at a time (iteration). Rewritten requests are kept (`reqs[row] = ...`)."""

    def __init__(self, gen: Any, ctx: BuildContext, frame: pd.DataFrame, count: int | None = None) -> None:
        self.gen, self.ctx, self.frame = gen, ctx, frame
        self.n = len(frame) if count is None else count  # `text_request_count`
        self.changed: dict[int, TextRequest] = {}

    def __len__(self) -> int:
        return self.n

    def at(self, rows: Sequence[int]) -> list[TextRequest]:
        """The requests of `rows` (made together: one pass over the parents' columns); only for a generator
        that makes one request per row."""
        if not self.gen.requests_per_row:
            raise TypeError(f"{self.gen.sobject}: requests are made a slice at a time, not by row")
        missing = sorted({r for r in rows if r not in self.changed})
        made: dict[int, TextRequest] = {}
        if missing:
            made = dict(zip(missing, self.gen.text_requests(self.ctx, self.frame.iloc[missing]), strict=True))
        return [self.changed[r] if r in self.changed else made[r] for r in rows]

    @overload
    def __getitem__(self, row: int) -> TextRequest: ...

    @overload
    def __getitem__(self, row: slice) -> list[TextRequest]: ...

    def __getitem__(self, row: int | slice) -> TextRequest | list[TextRequest]:
        if isinstance(row, slice):
            return self.at(range(self.n)[row])
        if not 0 <= row < self.n:
            raise IndexError(row)
        return self.at([row])[0]

    def __setitem__(self, row: int, request: TextRequest) -> None:
        self.changed[row] = request

    def __iter__(self) -> Iterator[TextRequest]:
        for lo in range(0, self.n, TEXT_CHUNK):
            hi = min(self.n, lo + TEXT_CHUNK)
            if self.changed:
                yield from self.at(range(lo, hi))
            else:
                yield from self.gen.text_requests_for(self.ctx, self.frame, lo, hi)


# -- the pipeline ------------------------------------------------------------------------------------------


@dataclass
class Progress:
    """Callbacks for a progress display; all optional."""

    on_object_start: Callable[[str, int], None] = lambda name, total: None
    on_object_done: Callable[[str, int, float], None] = lambda name, rows, seconds: None


@dataclass
class GenerationResult:
    rc: RunContext
    order: list[str]
    timings: dict[str, float] = field(default_factory=dict)
    text_counts: dict[str, int] = field(default_factory=dict)
    regenerated: dict[str, int] = field(default_factory=dict)

    @property
    def ctx(self) -> BuildContext:
        return self.rc.build


async def generate(
    rc: RunContext,
    executor: Executor,
    shards: int,
    persist: Callable[[str, pd.DataFrame, TextFill | None], Awaitable[None] | None],
    progress: Progress | None = None,
    shares_memory: bool = True,
    spill: bool = False,
) -> GenerationResult:
    """Generate every object in order. `persist(name, frame, fill)` is called once per finished object; for an
    object whose texts were spilled (`spills_texts`), `fill(rows, start)` gives a block of the frame's rows
    (from row `start` on) its text fields (generator/spill.py), and is None otherwise.

    With `shares_memory` False (the shards run in worker processes) the frames the workers read are stored in
    the work folder. With `spill` (or without `shares_memory`) this process too holds each finished object as
    stored there (`StoredFrame`, read column by column as later generators ask) rather than whole: slower by a
    few percent, and what it holds no longer grows with every finished object. The data are the same.

    The caller owns `rc` and closes its writer (`rc.aclose()`) when the run needs no more text."""
    progress = progress or Progress()
    root, run, ctx = rc.root, rc.run, rc.build
    work = root / WORK_DIR
    work.mkdir(parents=True, exist_ok=True)
    order = generation_order(ctx.model)
    result = GenerationResult(rc=rc, order=order)
    rule_fields = RuleFields(ctx)
    readers: dict[str, set[str]] = {}  # object -> the objects whose generation reads its frame
    for i, name in enumerate(order):
        for source in frames_read(ctx.model, name, order[:i]):
            readers.setdefault(source, set()).add(name)
    persisted: set[str] = set()
    # the text fields of the objects whose texts were spilled, filled as each is persisted
    fills: dict[str, TextFill] = {}
    for name in order:
        t0 = time.perf_counter()
        gen = GENERATORS[name]
        blocks = gen.n_blocks(ctx)
        progress.on_object_start(name, blocks)
        fill = None
        if made_apart(rc, gen, spill, shares_memory):
            # made in a child process (`generate_apart`), which reads what it needs of the objects made before
            # from the work folder and leaves the finished frame there; this process takes it back
            _forget_stored(ctx.frames)
            release_freed_memory()
            # (an executor may run it as a unit of its own: `run_apart`, a Prefect task)
            apart = getattr(executor, "run_apart", None)
            job = (str(root), run, name, shards)
            what = f"the making of {name}"
            count, redone, aside = await (
                apart(name, generate_apart, *job, what=what)
                if apart is not None
                else in_child(generate_apart, *job, what=what)
            )
            stored = work / f"{name}{APART_SUFFIX}"
            kept = StoredFrame(stored)
            # its fields set aside while its texts were written are joined here (`generate_apart`)
            frame = _taken_back(kept, aside) if aside is not None else kept.to_pandas()
            del kept
            shutil.rmtree(stored)
        else:
            frame, count, redone, fill = await _made(rc, executor, name, shards, shares_memory, spill)
        if gen.text_kind is not None:
            if fill is not None:
                fills[name] = fill
            if redone:
                result.regenerated[name] = redone
            result.text_counts[name] = count
        ctx.frames[name] = frame
        # Fields filled by the model's rules: this object's, and any that waited for this object (a lookup
        # deferred by the cycle policy). An object is persisted once all its fields are filled.
        rule_fields.add(name, frame, fills[name].columns if name in fills else ())
        complete = rule_fields.settle()
        stores = spill or not shares_memory
        settled = persisted | set(complete)
        # the finished objects some object still to generate (or a rule field still waiting) reads
        read_later = {n for n in settled if not readers.get(n, set()) <= settled}
        for done in dict.fromkeys([name, *complete]):
            # a finished object nothing reads later is let go below, not stored (scale 300: ~1 s of writing
            # EmailMessage's and LiveChatTranscript's frames that nothing read back)
            if stores and (done not in complete or done in read_later):
                save_frame(ctx.frames[done], work / done)
        swapped = 0
        for done in complete:
            maybe = persist(done, ctx.frames[done], fills.pop(done, None))
            if maybe is not None:
                await maybe
            if stores and done in read_later:
                # the building process too reads a finished object from the work folder from now on (only the
                # columns later steps use, forgotten after each object), not its whole frame
                swapped += len(ctx.frames[done])
                ctx.frames[done] = cast(pd.DataFrame, StoredFrame(work / done))
        persisted.update(complete)
        _forget_stored(ctx.frames)
        # A persisted frame that no object still to generate (or still waiting for a rule field) reads is
        # released: generation holds what later generators need, not the whole org.
        let_go = [n for n in ctx.frames if n in persisted and n not in read_later]
        rows = swapped + sum(len(ctx.frames[n]) for n in let_go)
        for held in let_go:
            ctx.release(held)
        made = len(frame)
        del frame  # held by ctx.frames (or stored) only
        if rows >= RELEASE_ROWS:
            release_freed_memory()
        result.timings[name] = time.perf_counter() - t0
        progress.on_object_done(name, made, result.timings[name])
    rule_fields.check_done()
    # the writer's memos were for generation's texts: let go, they would pin the heap freed around them
    rc.forget_memos()
    return result


async def _made(
    rc: RunContext,
    executor: Executor,
    name: str,
    shards: int,
    shares_memory: bool,
    set_aside: bool = False,
    left_aside: list[Aside] | None = None,
) -> tuple[pd.DataFrame, int, int, TextFill | None]:
    """Object `name` made: its blocks (split over shards run by `executor`), assembled in block order with
    their ids, then its texts (`_write_texts`). Returns the frame, how many text requests were written, how
    many rows were rewritten as near-duplicates, and the fill of its spilled texts (`_write_texts`).

    With `set_aside` (a large build), an object whose generator names its `request_fields` holds only those
    and its text fields while its texts are written and searched for near-duplicates; its other fields wait
    in the work folder (`_set_aside`). With `left_aside` too, they are not taken back: the frame returned
    holds only those fields, and the `Aside` to take the others back from is appended to `left_aside`."""
    ctx, root, run = rc.build, rc.root, rc.run
    gen = GENERATORS[name]
    blocks = gen.n_blocks(ctx)
    n = max(1, min(shards, blocks))
    jobs = [ShardJob(str(root), run, name, "structured", s, n) for s in range(n)]
    parts = [p for shard in await executor.run(rc, jobs) for p in shard]
    parts.sort(key=lambda bp: bp[0])
    made = [p for _, p in parts]
    del parts
    frame = gen.finalize(ctx, made)  # (which empties `made`: the blocks are now in `frame`)
    if gen.text_kind is not None:
        # the structured stage has read what it needed of the stored frames: the columns they kept for it
        # are let go before the object's texts (a long phase: Case's near-duplicate rounds), which read
        # again only the few they use (scale 300: Case's phase peaked at 1,394 MB instead of 1,538)
        _forget_stored(ctx.frames)
    if len(frame) >= RELEASE_ROWS:
        # the blocks' and the sort's copies are gone: the object's texts (a long phase, beside the sidecar's
        # checks) start from what is live (scale 300's emails: 1,025 -> 867 MB when their texts begin)
        release_freed_memory()
    if gen.text_kind is None:
        return frame, 0, 0, None
    aside = None
    if set_aside and gen.request_fields and not gen.spills_texts:
        # (rebinding `frame` lets go of the whole one: this coroutine would hold it through the texts)
        frame, aside = _set_aside(frame, gen, root / WORK_DIR)
        release_freed_memory()
        if left_aside is not None:
            left_aside.append(aside)
            aside = None  # (not taken back by `_write_texts`)
    return await _write_texts(rc, executor, name, frame, shards, shares_memory, aside)


# where an object's fields wait while its texts are written (`_set_aside`): `<Object>.aside` in the work folder
ASIDE_SUFFIX = ".aside"


@dataclass(frozen=True)
class Aside:
    """An object's fields set aside while its texts are written (`_set_aside`): all of its fields in their
    order, and the stored frame (generator/frames.py) holding those not held."""

    columns: tuple[str, ...]
    store: Path


def _set_aside(frame: pd.DataFrame, gen: Any, work: Path) -> tuple[pd.DataFrame, Aside]:
    """`frame` cut to the fields its text requests read (`request_fields`) and its text fields, in their order,
    the others stored in the work folder (`<Object>.aside`) until `_taken_back`.

    Why: the texts' phase of a large object is long and holds much besides its frame (its texts, then their
    near-duplicate index and rewriting rounds). Case's requests read 9 of its ~40 fields; the others (its
    owners' chains, transfer times, the offer's facts, the ids of its parents) were held the whole phase. At
    scale 1,000 the child process making the cases (`made_apart`) peaked at 2,999 MB with them, 2,331 MB
    without (benchmarks/results/bench_process_tree_1000.txt)."""
    missing = [f for f in gen.request_fields if f not in frame.columns]
    if missing:
        raise BuildError(
            f"{gen.sobject}: request_fields names {missing}, which its frame does not have; name only fields "
            "its generator's blocks make."
        )
    keep = set(gen.request_fields) | set(_text_fields(gen))
    columns = [str(c) for c in frame.columns]
    store = work / f"{gen.sobject}{ASIDE_SUFFIX}"
    save_frame(frame[[c for c in columns if c not in keep]], store)
    # a copy: a selection may be a view of the whole frame's blocks, which would keep them alive
    held = frame[[c for c in columns if c in keep]].copy()
    return held, Aside(tuple(columns), store)


def _taken_back(held: pd.DataFrame | StoredFrame, aside: Aside) -> pd.DataFrame:
    """The whole frame again: the fields `held` (with their texts now; in memory, or stored) and those
    `_set_aside` stored, in the frame's order; the stored copy is deleted."""
    stored = StoredFrame(aside.store)
    frame = pd.DataFrame(
        {c: held[c] if c in held.columns else stored.column(c) for c in aside.columns},
        index=pd.RangeIndex(len(held)),
    )
    del stored
    shutil.rmtree(aside.store)
    return frame


async def _write_texts(
    rc: RunContext,
    executor: Executor,
    name: str,
    frame: pd.DataFrame,
    shards: int,
    shares_memory: bool,
    aside: Aside | None = None,
) -> tuple[pd.DataFrame, int, int, TextFill | None]:
    """Write object `name`'s texts into its structured `frame`: its text shards (run by `executor`), then its
    near-duplicate rounds. Returns the frame, how many requests were written, how many rows were rewritten
    as near-duplicates, and for a generator that `spills_texts` the fill that puts its texts in place as its
    CSV is written (the frame then has no text fields). With `aside`, `frame` holds only some of the object's
    fields (`_set_aside`): the others are taken back at the end."""
    ctx, root, run = rc.build, rc.root, rc.run
    work = root / WORK_DIR
    gen = GENERATORS[name]
    ctx.frames[name + ":structured"] = frame
    if not shares_memory:
        save_frame(frame, work / f"{name}.structured")
    reqs: list[TextRequest] | RequestsOnDemand
    count = gen.text_request_count(ctx, frame)
    if count is not None and (gen.requests_per_row or not gen.dedup_fields):
        # each text shard makes its own requests (in a worker, or here) and lets them go with its texts;
        # this process makes again only those it rewrites (Case's requests were 273 MB of the 2.1 GB
        # peak of a scale-300 generation, held through the near-duplicate rounds)
        reqs = RequestsOnDemand(gen, ctx, frame, count)
    else:
        reqs = gen.text_requests(ctx, frame)
        rc.text_requests[name] = reqs
    tn = max(1, min(shards, len(reqs)))
    tjobs = [ShardJob(str(root), run, name, "text", s, tn) for s in range(tn)]
    fill = None
    redone = 0
    if gen.spills_texts:
        spilled = SpilledTexts(work, await executor.run(rc, tjobs), _text_fields(gen))
        if spilled.results != len(reqs):
            raise BuildError(
                f"{name}: {spilled.results} texts for {len(reqs)} requests; no record may be dropped."
            )
        fill = TextFill(spilled, gen.text_rows(ctx, frame, spilled.sizes))
        del spilled
    else:
        texts = [r for shard in await executor.run(rc, tjobs) for r in shard]
        if len(texts) != len(reqs):
            raise BuildError(
                f"{name}: {len(texts)} texts for {len(reqs)} requests; no record may be dropped."
            )
        frame = gen.apply_text(ctx, frame, reqs, texts)
        frame, redone = await _regenerate_near_duplicates(ctx, rc.writer(), gen, frame, reqs, texts)
        del texts
        if aside is not None:
            frame = _taken_back(frame, aside)
    written = len(reqs)
    del ctx.frames[name + ":structured"]
    rc.text_requests.pop(name, None)
    return frame, written, redone, fill


# An object planned with at least this many rows whose texts stay in its frame and are searched for
# near-duplicates is made in a child process in a large build (`made_apart`). Measured, generation alone: at
# scale 300 (293,100 cases) the child cost 26 s of 171 (starting it, making the context, the frame stored and
# read back; the emails and chats after it were slower too, not explained) for ~130 MB given back. At scale
# 1,000 (977,000 cases) the building process had held ~870 MB more after Case than before it; made apart, the
# build's peak fell from 4,274 to 3,928 MB (benchmarks/results/bench_process_tree_1000.txt).
APART_ROWS = 500_000
APART_SUFFIX = ".made"  # the work folder's copy of a frame made in a child process


def made_apart(rc: RunContext, gen: Any, spill: bool, shares_memory: bool) -> bool:
    """Whether object `gen.sobject` is made in a child process (`generate_apart`) rather than in this one: in a
    large build (`spill`) whose shards run in this process, for an object planned with APART_ROWS rows or
    more whose texts are held in its frame and searched for near-duplicates (Case from scale 512 on), with
    the offline writer.

    Why: making such an object (its blocks, then its texts, near-duplicate index and rewriting rounds; ~2.1
    GB at scale 1,000 for Case) frees almost all it allocated, but the few small objects it leaves alive
    are scattered among those freed, and each keeps the 1 MiB arena of Python's allocator it sits in. At
    scale 100 the building process held 149 arenas after Case for 45 MB of live objects, against 54 before
    it, to the end of the build (benchmarks/bench_heap_retained.py); at scale 1,000, 1,131 MB against 265.
    A child gives all of its memory back when it ends. Objects are not moved when an LLM writer writes: its
    usage, cache and limits are the building process's."""
    planned = int(rc.build.world.counts.get(gen.sobject, 0))
    return (
        spill
        and shares_memory
        and planned >= APART_ROWS
        and gen.text_kind is not None
        and bool(gen.dedup_fields)
        and not gen.spills_texts
        and rc.run.writer == "offline"
    )


def generate_apart(root: str, run: RunSpec, name: str, shards: int) -> tuple[int, int, Aside | None]:
    """In a child process: object `name` made (`_made`, its shards run here one after another) and stored in the
    work folder (`<name>.made`). Returns how many text requests were written, how many rows were rewritten,
    and where its fields set aside while its texts were written wait (`_set_aside`), if they were: the frame
    stored holds the others only, and the building process joins the two (`_taken_back`).

    Why not joined here: the child would hold the whole frame at its end, beside what its near-duplicate
    rounds left of its heap; its peak at scale 1,000 was that moment (2,125 MB, its rounds ~1.93-2.03 GB:
    benchmarks/results/bench_process_tree_1000.txt). The building process reads the whole frame either way.

    The context is made anew from `run`, reading the objects made before from the work folder as a Dask
    worker does (`RunContext.load_frames`): the same frame as the building process would make."""
    rc = RunContext(Path(root), run, make_context(run))
    rc.load_frames(name, "structured")
    left: list[Aside] = []

    async def made() -> tuple[pd.DataFrame, int, int]:
        try:
            frame, count, redone, _ = await _made(
                rc, LocalExecutor(), name, shards, True, set_aside=True, left_aside=left
            )
        finally:
            await rc.aclose()
        return frame, count, redone

    frame, count, redone = asyncio.run(made())
    save_frame(frame, rc.root / WORK_DIR / f"{name}{APART_SUFFIX}")
    return count, redone, left[0] if left else None


def _text_fields(gen: Any) -> list[str]:
    """The fields an object's texts fill, in the order of a message's strings (`LANDS_IN`)."""
    return [name for _, name in LANDS_IN[gen.text_kind].values()]


# Rewriting goes on while the rounds make progress: the counts fall roughly geometrically (at scale 100 the
# offline writer went 8,473 → 1,550 → 394 → 109 → 40 → 19 → 10 → 6 → 3 → 2 → 1 → 0 for Case). It stops
# after STALLED_ROUNDS rounds in a row that leave no fewer near-duplicates than the best round so far, or
# after MAX_REGENERATION_ROUNDS in all.
MAX_REGENERATION_ROUNDS = 32
STALLED_ROUNDS = 3


async def _regenerate_near_duplicates(
    ctx: BuildContext,
    writer: TextWriter,
    gen: Any,
    frame: pd.DataFrame,
    reqs: list[TextRequest] | RequestsOnDemand,
    texts: list[Any],
) -> tuple[pd.DataFrame, int]:
    """Rewrite the later record of every near-duplicate pair (with an `attempt` counter) until none remain.

    Fails with a BuildError when rewriting stops making progress (STALLED_ROUNDS) or runs out of rounds
    (MAX_REGENERATION_ROUNDS). Runs on the whole object after all shards, so the outcome never depends on
    how texts were sharded.
    """
    if not gen.dedup_fields:
        return frame, 0
    if len(reqs) != len(frame):
        raise BuildError(
            f"{gen.sobject}: dedup needs one text request per row ({len(reqs)} for {len(frame)})."
        )
    attempts: dict[int, int] = {}
    indexes = {f: NearDuplicateIndex(frame[f].tolist()) for f in gen.dedup_fields}
    # (the pairs as arrays: scale 1,000's first search finds 1.93 M, ~290 MB as tuples)
    redo = {j for index in indexes.values() for j in index.pair_arrays()[1].tolist()}
    rounds = stalled = 0
    best = len(redo)
    while redo and rounds < MAX_REGENERATION_ROUNDS and stalled < STALLED_ROUNDS:
        rounds += 1
        rows = sorted(redo)
        # rewritten TEXT_CHUNK rows at a time, as the text shards write (a request's text depends on that
        # request alone): a round's requests, their rewritten copies and new texts are held for one chunk, not
        # for every row it rewrites (scale 1,000's first round rewrites 241,835 cases)
        for start in range(0, len(rows), TEXT_CHUNK):
            part = rows[start : start + TEXT_CHUNK]
            again = []
            current = reqs.at(part) if isinstance(reqs, RequestsOnDemand) else [reqs[r] for r in part]
            for r, req in zip(part, current, strict=True):
                attempts[r] = attempts.get(r, 0) + 1
                again.append(TextRequest(req.kind, req.key, {**req.facts, "attempt": attempts[r]}))
            new = gen.held_texts(await writer.write(gen.text_kind, again))
            for r, res in zip(part, new, strict=True):
                texts[r] = res
            if not isinstance(reqs, RequestsOnDemand):
                for r, req in zip(part, again, strict=True):
                    reqs[r] = req
            # requests made on demand are not kept rewritten: a row's next rewrite is made again from its
            # record with the attempt counter set, the same request as its last one with the counter raised
            # (scale 300's cases kept ~63,000, ~75 MB, through the rounds)
            del again, current, new
        frame = gen.apply_text(ctx, frame, reqs, texts)
        redo = set()
        for fname, index in indexes.items():
            column = frame[fname].tolist()
            index.replace_many(rows, [column[r] for r in rows])
            lo, hi, _ = index.pair_arrays(focus=rows)
            # of each pair, its later row when that one was rewritten now, else its earlier one
            redo.update(np.where(np.isin(hi, rows), hi, lo).tolist())
        stalled = 0 if len(redo) < best else stalled + 1
        best = min(best, len(redo))
    if redo:
        raise BuildError(
            f"{gen.sobject}: {len(redo)} text(s) are still near-duplicates after {rounds} rounds of rewriting; "
            "the writer cannot produce enough variety for this volume. Lower the scale or add vocabulary."
        )
    return frame, len(attempts)
