"""The shape every object generator follows.

Generation of one object runs in fixed-size *blocks* of its driver unit (customers, orders, cases ...).
A block's randomness comes from (seed, object, block index) only, and blocks are concatenated in block
order, so the output is byte-identical whatever the number of shards or workers that ran the blocks.
Ids are assigned after concatenation (optionally after a stable sort by a time column, so ids grow with
time as in a real org). Columns whose name starts with `_` are latent: kept for later stages and written
to `latent/`, never to `data/`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np
import pandas as pd
from faker import Faker

from generator.ids import make_ids
from generator.rng import derive_seed, np_rng
from generator.text.base import LANDS_IN, TextKind, TextRequest
from generator.world import World
from schemas.gcpause import release_freed_memory
from schemas.model import OrgModel
from schemas.profile import Profile

T = TypeVar("T")


@dataclass
class BuildContext:
    model: OrgModel
    profile: Profile
    world: World
    seed: int
    scale: float
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    plans: dict[str, Any] = field(default_factory=dict)
    # objects whose frames were let go once no object still to generate reads them (memory bounded by what
    # later generators need, not by the org)
    released: set[str] = field(default_factory=set)

    def frame(self, name: str) -> pd.DataFrame:
        if name not in self.frames and name in self.released:
            raise KeyError(
                f"the {name} frame was released once no generator still to run declared it in `reads`; "
                f"add {name!r} to the `reads` of the generator that needs it (generator/objects/)."
            )
        return self.frames[name]

    def release(self, name: str) -> None:
        """Let go of `name`'s frame (and its plans): nothing still to generate reads it."""
        self.frames.pop(name, None)
        for key in [k for k in self.plans if k.split(".", 1)[0] == name]:
            del self.plans[key]
        self.released.add(name)

    def rng(self, *parts: object) -> np.random.Generator:
        return np_rng(self.seed, *parts)

    def faker(self, *parts: object) -> Faker:
        fake = Faker("en_US")
        fake.seed_instance(derive_seed(self.seed, "faker", *parts))
        return fake

    def plan(self, key: str, build: Callable[[], T]) -> T:
        """A per-run cached global plan (e.g. how many orders each customer places)."""
        if key not in self.plans:
            self.plans[key] = build()
        result: T = self.plans[key]
        return result


# letting go of frames with this many rows in all gives their memory back to the system at once (generator/pipeline.py;
# `finalize`, the memory an object's blocks held before its frame is sorted)
RELEASE_ROWS = 50_000


class ObjectGenerator:
    sobject: ClassVar[str]
    after: ClassVar[tuple[str, ...]] = ()  # non-lookup dependencies (generation needs their frames)
    # the other objects' frames this generator reads (blocks, finalize, texts); None: any earlier frame. A frame
    # no generator still to run reads is released during generation (generator/pipeline.py).
    reads: ClassVar[tuple[str, ...] | None] = None
    block_size: ClassVar[int] = 1024
    sort_by: ClassVar[tuple[str, ...]] = ()
    text_kind: ClassVar[TextKind | None] = None
    # Free-text fields that must not be near-duplicates of each other (regenerated when they are); the
    # object's text requests must be aligned with its rows for these.
    dedup_fields: ClassVar[tuple[str, ...]] = ()
    # One text request per row, made from that row alone: `text_requests(ctx, frame.iloc[rows])` are the
    # requests of `rows` (a worker makes its shard's; the building process those it rewrites).
    requests_per_row: ClassVar[bool] = False
    # Texts spilled to the work folder as the text shards write them and put in place only as the object's CSV
    # is written (generator/spill.py), for an object whose texts nothing but its CSV reads: the building process
    # never holds them. Its frame has no text fields; `text_rows` places each result's messages.
    spills_texts: ClassVar[bool] = False
    # For a `requests_per_row` object: every field of its own frame that `text_requests` reads. In a large
    # build its other fields are set aside in the work folder while its texts are written and searched for
    # near-duplicates, and taken back after (generator/pipeline.py `_set_aside`); a field read but not named
    # here fails that build with a KeyError, never silently.
    request_fields: ClassVar[tuple[str, ...]] = ()

    def units(self, ctx: BuildContext) -> int:
        raise NotImplementedError

    def n_blocks(self, ctx: BuildContext) -> int:
        return max(1, math.ceil(self.units(ctx) / self.block_size))

    def block_range(self, ctx: BuildContext, b: int) -> range:
        n = self.units(ctx)
        return range(b * self.block_size, min(n, (b + 1) * self.block_size))

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        raise NotImplementedError

    def finalize(self, ctx: BuildContext, parts: list[pd.DataFrame]) -> pd.DataFrame:
        """The object's frame from its blocks `parts` (in block order): joined, sorted by `sort_by`, given its
        ids. `parts` is emptied once joined, and for a large object that is sorted the memory the blocks held
        is given back to the system before the sort: a caller passing its only list of the blocks lets them go
        there. The blocks' arrays are small, so the C heap keeps them freed but not returned: the child making
        scale 1,000's cases rose by ~470 MB here to 1.90 GB, as high as its near-duplicate rounds (its largest
        sample here is 1.66 GB now)."""
        frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        parts.clear()
        if self.sort_by and len(frame) and not in_order(frame, self.sort_by):
            # (a stable sort of rows already in order is a copy of the whole frame that changes nothing: at
            # scale 1,000, OrderItem's 7.1 M rows come from their blocks in order; the caller gives back what
            # an unsorted join freed)
            if len(frame) >= RELEASE_ROWS:
                release_freed_memory()
            frame = frame.sort_values(list(self.sort_by), kind="stable").reset_index(drop=True)
        spec = ctx.model.get(self.sobject)
        frame.insert(0, "Id", make_ids(spec.key_prefix, 0, len(frame)))
        return self.after_ids(ctx, frame)

    def after_ids(self, ctx: BuildContext, frame: pd.DataFrame) -> pd.DataFrame:
        return frame

    # -- text --------------------------------------------------------------------------------------------

    def text_requests(self, ctx: BuildContext, frame: pd.DataFrame) -> list[TextRequest]:
        return []

    def text_request_count(self, ctx: BuildContext, frame: pd.DataFrame) -> int | None:
        """How many text requests `text_requests(ctx, frame)` makes, when `text_requests_for` can make a slice
        of them without making them all (a worker then makes only its shard's); None when it cannot."""
        return len(frame) if self.requests_per_row else None

    def text_requests_for(
        self, ctx: BuildContext, frame: pd.DataFrame, lo: int, hi: int
    ) -> list[TextRequest]:
        """`text_requests(ctx, frame)[lo:hi]`, made for those requests only where `text_request_count` says so."""
        if self.requests_per_row:
            return self.text_requests(ctx, frame.iloc[lo:hi])
        return self.text_requests(ctx, frame)[lo:hi]

    def held_texts(self, results: list[dict[str, Any]]) -> list[Any]:
        """The writer's results as the pipeline holds them until `apply_text` reads them, a batch at a time as
        they come from the writer: for a kind whose results land in fields (`LANDS_IN`), each result as the
        tuple of those fields' values in `LANDS_IN` order (a two-key dict is 184 bytes, the tuple 56: at scale
        1,000, ~125 MB of Case's texts held through its near-duplicate rounds); as written otherwise."""
        if self.text_kind is None or self.text_kind not in LANDS_IN:
            return results
        keys = tuple(LANDS_IN[self.text_kind])
        return [tuple(r[k] for k in keys) for r in results]

    def text_rows(self, ctx: BuildContext, frame: pd.DataFrame, sizes: np.ndarray) -> np.ndarray:
        """For a `spills_texts` object: per row of `frame`, the number of its message among the writer's results
        (joined in order; `sizes[k]` is how many messages the k-th result holds), after checking that every
        result holds as many messages as it must."""
        raise NotImplementedError

    def apply_text(
        self,
        ctx: BuildContext,
        frame: pd.DataFrame,
        requests: Sequence[TextRequest],
        results: Sequence[Any],
    ) -> pd.DataFrame:
        """The frame with the writer's results, as `held_texts` holds them (tuples in `LANDS_IN` order), in their
        fields (`LANDS_IN`); one result per row, in order."""
        if self.text_kind is not None and self.text_kind in LANDS_IN:
            for k, (_, name) in enumerate(LANDS_IN[self.text_kind].values()):
                frame[name] = [r[k] for r in results]
        return frame


def in_order(frame: pd.DataFrame, keys: Sequence[str]) -> bool:
    """Whether `frame`'s rows are already in the order of a sort by `keys` (each ascending, the first
    deciding): its rows are then the stable sort's, whose ties keep their order. A key with a missing
    value answers False (a sort puts those last)."""
    undecided = np.ones(max(0, len(frame) - 1), dtype=bool)  # neighbours the keys so far found equal
    for key in keys:
        column = frame[key]
        if column.isna().any():
            return False
        values = column.to_numpy()
        before, after = values[:-1], values[1:]
        if (undecided & (before > after)).any():
            return False
        undecided &= before == after
        if not undecided.any():
            break
    return True


# the first values of a string column looked at to tell whether its repeated values are separate objects
SHARE_SAMPLE = 64


def share_repeated_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame`, each of whose string columns holds a repeated value as one object, not one per row. A column
    made from a NumPy string array (`np.where(closed, "Closed", ...)`) holds a new str per row, ~60 bytes
    each: at scale 1,000 Case's five such columns held ~270 MB through its texts. The values, dtypes and
    column order are unchanged, so is every byte written; a column whose first values already share their
    objects, or do not repeat, is left as it is."""
    for column in frame.columns:
        series = frame[column]
        if not isinstance(series.dtype, pd.StringDtype):
            continue
        values = np.asarray(series.array, dtype=object)
        head = [v for v in values[:SHARE_SAMPLE].tolist() if isinstance(v, str)]
        if len({id(v) for v in head}) <= len(set(head)):
            continue
        codes, uniques = pd.factorize(values)
        shared = np.asarray(uniques, dtype=object)[codes]
        missing = codes < 0
        shared[missing] = values[missing]  # NA stays as it was (a code of -1 took the last value)
        frame[column] = pd.Series(shared, index=frame.index, dtype=series.dtype, name=column)
    return frame


def weighted_choice_rows(rng: np.random.Generator, weights: np.ndarray) -> np.ndarray:
    """For each row of `weights` (rows × options), one option index drawn proportionally to the row."""
    w = np.asarray(weights, dtype=float)
    return choice_rows(rng.random((w.shape[0], 1)), w)


def choice_rows(u: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """For each row of `weights` (rows × options, float), the option where the row's cumulative weight passes
    `u` (rows × 1, in [0, 1)) times its total: the choices `weighted_choice_rows` makes from the numbers `u`."""
    cum = np.cumsum(weights, axis=1)
    idx = (cum < u * cum[:, -1:]).sum(axis=1)
    return np.minimum(idx, weights.shape[1] - 1)


def exact_allocation(
    rng: np.random.Generator, total: int, weights: np.ndarray, minimum: int = 0
) -> np.ndarray:
    """Split `total` units over len(weights) slots: each gets `minimum`, the rest proportionally at random."""
    n = len(weights)
    if n == 0:
        return np.zeros(0, dtype=int)
    base = np.full(n, minimum, dtype=int)
    rest = total - minimum * n
    if rest < 0:
        # Not enough units for the minimum everywhere: give one unit to `total` slots chosen by weight.
        w = np.asarray(weights, dtype=float)
        chosen = rng.choice(n, size=total, replace=False, p=w / w.sum())
        out = np.zeros(n, dtype=int)
        out[chosen] = 1
        return out
    w = np.asarray(weights, dtype=float)
    return base + rng.multinomial(rest, w / w.sum())


def capped_allocation(
    rng: np.random.Generator, counts: np.ndarray, weights: np.ndarray, cap: int
) -> np.ndarray:
    """`counts` with every slot above `cap` lowered to it and the units taken off given to the slots below it, at
    random in proportion to their weights, until none is above: the total is unchanged. Draws nothing (and
    returns `counts` itself) when no slot is above `cap`. The caller checks that cap × slots holds the total."""
    out = counts
    excess = int(np.maximum(out - cap, 0).sum())
    while excess:
        out = np.minimum(out, cap)
        w = np.where(out < cap, np.asarray(weights, dtype=float), 0.0)
        out = out + rng.multinomial(excess, w / w.sum())
        excess = int(np.maximum(out - cap, 0).sum())
    return out
