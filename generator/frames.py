"""Frames persisted for worker processes, read back column by column and part by part.

A Dask worker that runs a shard of one object needs a few columns of the objects it reads (the ids its
lookups draw, a date, a position), and often only the rows of its own slice (CaseHistory__c reads the cases
of its blocks). `save_frame` writes a frame as one pickle per column and per `PART_ROWS` rows;
`StoredFrame` reads it back lazily: a column is read when first asked for, and a row slice reads only the
parts it covers. A worker's memory is then bounded by the columns its generator uses (whole, for lookups)
plus the parts of its own rows, not by the parents' whole frames.

`StoredFrame` answers the part of the pandas DataFrame interface the generators use on the frames they read
(`len`, `frame[column]`, `frame[bool mask]`, `frame.iloc[slice or positions]`, `columns`, iteration over
`frame[column]`); a column comes back as the very Series the frame held (same values, dtype, name and index
labels), so what a generator computes from it is unchanged.
"""

from __future__ import annotations

import pickle
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from orgs.bundle import PackedColumn

# rows per part: a shard at scale 1,000 covers ~4,000 cases; a part of a text column (Case.Description) of
# 16,384 rows is ~10 MB
PART_ROWS = 1 << 14
META = "meta.pkl"
# memory of the parts of partly read columns kept per stored frame (least recently used dropped first; a
# shard's rows span one or two parts per column, a part of a text column ~10 MB)
CACHED_PART_BYTES = 256 * 2**20


class FrameStoreError(ValueError):
    """A frame that cannot be stored or read back this way."""


def save_frame(frame: pd.DataFrame, folder: Path) -> None:
    """Write `frame` into `folder` as one pickle per column and part; the metadata last (a folder without it
    is incomplete)."""
    n = len(frame)
    if not frame.index.equals(pd.RangeIndex(n)):
        raise FrameStoreError(
            f"{folder.name}: a stored frame needs the index 0..{n - 1} (reset_index(drop=True) first)."
        )
    if not frame.columns.is_unique:
        raise FrameStoreError(f"{folder.name}: duplicate column names {list(frame.columns)}.")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / META).unlink(missing_ok=True)
    columns = [str(c) for c in frame.columns]
    parts = max(1, -(-n // PART_ROWS))
    for i, column in enumerate(columns):
        values = frame[column]
        for p in range(parts):
            with open(folder / f"{i}.{p}.pkl", "wb") as f:
                pickle.dump(values.iloc[p * PART_ROWS : (p + 1) * PART_ROWS], f, protocol=5)
    with open(folder / META, "wb") as f:
        pickle.dump({"columns": columns, "rows": n, "part_rows": PART_ROWS, "parts": parts}, f)


class StoredFrame:
    """A frame written by `save_frame`, read lazily (module docstring). Whole columns once read are kept; parts
    of partly read columns are kept in a small LRU cache."""

    def __init__(self, folder: Path) -> None:
        try:
            with open(folder / META, "rb") as f:
                meta = pickle.load(f)
        except FileNotFoundError:
            raise FrameStoreError(
                f"{folder} holds no complete stored frame ({META} is missing): the build that persists it "
                "did not finish; rerun the build."
            ) from None
        self.folder = folder
        self.names: list[str] = meta["columns"]
        self.rows: int = meta["rows"]
        self.part_rows: int = meta["part_rows"]
        self.parts: int = meta["parts"]
        self._where = {c: i for i, c in enumerate(self.names)}
        self.whole: dict[str, pd.Series] = {}
        self._parts: OrderedDict[tuple[int, int], pd.Series] = OrderedDict()
        self._part_bytes: dict[tuple[int, int], int] = {}
        self._cached = 0
        # seconds spent reading (for benchmarks): whole columns (once per worker and stage) and parts (per shard)
        self.whole_seconds = 0.0
        self.part_seconds = 0.0

    # -- reading ---------------------------------------------------------------------------------------------

    def _index(self, column: str) -> int:
        try:
            return self._where[column]
        except KeyError:
            raise KeyError(column) from None

    def _load(self, i: int, p: int) -> pd.Series:
        with open(self.folder / f"{i}.{p}.pkl", "rb") as f:
            got: pd.Series = pickle.load(f)
        return got

    def _part(self, i: int, p: int) -> pd.Series:
        key = (i, p)
        got = self._parts.get(key)
        if got is None:
            t = time.perf_counter()
            got = self._load(i, p)
            self.part_seconds += time.perf_counter() - t
            size = int(got.memory_usage(deep=True))
            self._parts[key] = got
            self._part_bytes[key] = size
            self._cached += size
            while self._cached > CACHED_PART_BYTES and len(self._parts) > 1:
                old, _ = self._parts.popitem(last=False)
                self._cached -= self._part_bytes.pop(old)
        else:
            self._parts.move_to_end(key)
        return got

    def column(self, column: str) -> pd.Series:
        """The whole column (kept once read)."""
        got = self.whole.get(column)
        if got is None:
            i = self._index(column)
            t = time.perf_counter()
            pieces = []
            for p in range(self.parts):
                held = self._parts.get((i, p))
                pieces.append(self._load(i, p) if held is None else held)
            got = pieces[0] if len(pieces) == 1 else pd.concat(pieces)
            self.whole_seconds += time.perf_counter() - t
            got.index = pd.RangeIndex(self.rows)
            for p in range(self.parts):
                self._drop((i, p))
            self.whole[column] = got
        return got

    def column_rows(self, column: str, rows: range | np.ndarray) -> pd.Series:
        """The column at the given row positions (a range or sorted or unsorted positions), with those
        positions as its index labels (as `frame.iloc[rows][column]` has), reading only the parts they fall
        in unless the whole column is already held."""
        if column in self.whole:
            whole = self.whole[column]
            return whole.iloc[rows.start : rows.stop] if isinstance(rows, range) else whole.iloc[rows]
        i = self._index(column)
        size = self.part_rows
        if isinstance(rows, range):
            if len(rows) == 0:
                return self._part(i, 0).iloc[0:0]
            first, last = rows.start // size, (rows.stop - 1) // size
            pieces = [self._part(i, p) for p in range(first, last + 1)]
            joined = pieces[0] if len(pieces) == 1 else pd.concat(pieces)
            lo = rows.start - first * size
            return joined.iloc[lo : lo + len(rows)]
        positions = np.asarray(rows, dtype=np.int64)
        if len(positions) == 0:
            return self._part(i, 0).iloc[0:0]
        if positions.min() < 0 or positions.max() >= self.rows:
            raise IndexError(f"positions out of bounds for {self.rows} rows")
        needed = np.unique(positions // size)
        pieces = [self._part(i, int(p)) for p in needed]
        joined = pieces[0] if len(pieces) == 1 else pd.concat(pieces)
        # every part but the frame's last holds `size` rows, and the last can only come last in `needed`
        local = np.searchsorted(needed, positions // size) * size + positions % size
        return joined.iloc[local]

    def _drop(self, key: tuple[int, int]) -> None:
        if self._parts.pop(key, None) is not None:
            self._cached -= self._part_bytes.pop(key)

    def forget(self) -> None:
        """Let go of every column and part read so far."""
        self.whole.clear()
        self._parts.clear()
        self._part_bytes.clear()
        self._cached = 0

    def held_bytes(self) -> int:
        """The memory of the columns and parts held (pandas' deep count)."""
        return self.whole_bytes() + self._cached

    def whole_bytes(self) -> int:
        """The memory of the whole columns held."""
        return sum(int(s.memory_usage(deep=True)) for s in self.whole.values())

    def part_bytes(self) -> int:
        """The memory of the parts held (at most CACHED_PART_BYTES plus one part)."""
        return self._cached

    def to_pandas(self) -> pd.DataFrame:
        """The whole frame, every column read."""
        return pd.DataFrame({c: self.column(c) for c in self.names}, index=pd.RangeIndex(self.rows))

    # -- the DataFrame face (the whole frame as a view) ---------------------------------------------------------

    def view(self) -> FrameView:
        return FrameView(self, range(self.rows))

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return self.column(key)
        return self.view()[key]

    def __contains__(self, column: object) -> bool:
        return column in self._where

    @property
    def columns(self) -> pd.Index:
        return pd.Index(self.names)

    @property
    def iloc(self) -> _ILoc:
        return _ILoc(self.view())


class FrameView:
    """Rows of a `StoredFrame` (a range or positions), as `frame.iloc[...]` or `frame[mask]` select them."""

    def __init__(self, store: StoredFrame, rows: range | np.ndarray) -> None:
        self.store = store
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __contains__(self, column: object) -> bool:
        return column in self.store

    @property
    def columns(self) -> pd.Index:
        return self.store.columns

    @property
    def iloc(self) -> _ILoc:
        return _ILoc(self)

    def select(self, key: Any) -> FrameView:
        """The rows `key` picks among this view's (a slice with step 1, or positions relative to the view)."""
        if isinstance(key, slice):
            if key.step not in (None, 1):
                raise FrameStoreError("a stored frame's views take slices with step 1 only")
            picked = self.rows[key]
            return FrameView(self.store, picked if isinstance(picked, range) else np.asarray(picked))
        positions = np.asarray(key)
        if positions.dtype == bool:
            positions = np.flatnonzero(positions)
        base = self.rows
        chosen = np.asarray(base, dtype=np.int64)[positions] if len(positions) else np.zeros(0, np.int64)
        return FrameView(self.store, chosen)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return self.store.column_rows(key, self.rows)
        if isinstance(key, pd.Series):
            key = key.to_numpy()
        mask = np.asarray(key)
        if mask.dtype != bool or len(mask) != len(self):
            raise FrameStoreError("a stored frame's view takes a column name or a boolean mask of its rows")
        return self.select(mask)


class _ILoc:
    def __init__(self, view: FrameView) -> None:
        self.view = view

    def __getitem__(self, key: Any) -> FrameView:
        if isinstance(key, tuple) or np.isscalar(key):
            raise FrameStoreError("a stored frame's iloc takes a row slice or row positions")
        return self.view.select(key)


def take_array(frame: Any, column: str, positions: np.ndarray) -> np.ndarray:
    """`frame[column].to_numpy()[positions]`: from a `StoredFrame`, reading only the parts the positions fall
    in (a lookup drawing a few parents' ids need not hold the parents' whole id column)."""
    if isinstance(frame, StoredFrame):
        got = frame.column_rows(column, np.asarray(positions)).to_numpy()
        if got.dtype != object:
            return got
        # The strings kept are made anew, side by side, rather than kept from the parts read: those parts are
        # let go, and a kept string would pin the allocator's pool it sits in among them (Case keeps the ids of
        # one order item in seven: at scale 300 its phase peaked at 1,205 MB with them kept, 1,024 MB without)
        strings = np.fromiter((type(v) is str for v in got), dtype=bool, count=len(got))
        packed = PackedColumn()
        packed.add(got[strings].tolist())
        out = got.copy()
        out[strings] = packed.array()
        return out
    values: np.ndarray = frame[column].to_numpy()[positions]
    return values


def take(frame: Any, column: str, positions: np.ndarray) -> list[Any]:
    """`take_array` as a list (Python scalars)."""
    values: list[Any] = take_array(frame, column, positions).tolist()
    return values
