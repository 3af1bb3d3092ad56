"""Texts spilled to the work folder as a text shard writes them, read back a block of rows at a time as the
object's CSV is written.

An object whose texts are many and read by nothing but its own CSV (EmailMessage: 970,200 emails at scale
300, ~390 MB of subjects and bodies as Python strings) does not hold them in the building process. Each text
shard writes the strings of its results, in order, to a file of the work folder (`ShardSpiller`) and returns
only where each string ends (`SpilledShard`); the building process joins the shards (`SpilledTexts`) and gives
the object's writer a `TextFill`, which puts each block of rows' texts in place as the block is written. The
bytes written are those of applying every text to the frame first: every row gets the strings its result held.

A result is a sequence of messages, each a tuple of one string (or None) per text field; a result of one
message per row is the simplest case. String `i * F + f` of the joined shards is field `f` of message `i`.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from generator.objects.orders import BuildError

CHANGED = "the work folder was changed during the build. Build again."
FIX = "A writer must return one text (or null) for each field of every message; fix the writer (or its plug-in)."


@dataclass(frozen=True)
class SpilledShard:
    """What a text shard returns for the texts it spilled: the file's name (in the work folder), the byte end
    of each string in it, how many messages each of its results holds, and which strings are None."""

    file: str
    ends: np.ndarray  # int64, cumulative
    sizes: np.ndarray  # int64, messages per result
    nulls: np.ndarray  # int64, the strings (numbered within the shard) that are None


class ShardSpiller:
    """Writes a text shard's results to `folder/name` (through a temporary file, put in place by `close`, so a
    retried shard replaces its file whole), `fields` strings per message."""

    def __init__(self, folder: Path, name: str, fields: Sequence[str]) -> None:
        self.folder, self.name, self.fields = folder, name, tuple(fields)
        self.tmp = folder / f"{name}.tmp"
        self.fh = self.tmp.open("wb")
        self.ends: list[np.ndarray] = []  # per chunk, int64
        self.sizes: list[np.ndarray] = []
        self.nulls: list[int] = []
        self.count = 0  # strings written
        self.at = 0  # bytes written

    def add(self, results: Sequence[Sequence[Sequence[str | None]]], keys: Sequence[str]) -> None:
        """Write a chunk of results (in order after those added before), each the result of the request whose
        key is in `keys` (named in errors)."""
        width = len(self.fields)
        strings: list[Any] = []
        sizes: list[int] = []
        for key, messages in zip(keys, results, strict=True):
            sizes.append(len(messages))
            for m, message in enumerate(messages):
                if len(message) != width:
                    raise BuildError(
                        f"A text result's message holds {len(message)} texts where {width} were expected "
                        f"({', '.join(self.fields)}): request {key}, message {m}. {FIX}"
                    )
                strings.extend(message)
        if not set(map(type, strings)) <= {str}:
            ends = np.cumsum(sizes)
            for i, text in enumerate(strings):
                if text is not None and not isinstance(text, str):
                    r = int(np.searchsorted(ends, i // width, side="right"))
                    m = i // width - (int(ends[r - 1]) if r else 0)
                    raise BuildError(
                        f"The writer returned a value of type {type(text).__name__} for a message's "
                        f"{self.fields[i % width]}, not text: request {keys[r]}, message {m}. {FIX}"
                    )
            self.nulls.extend(self.count + i for i, text in enumerate(strings) if text is None)
            strings = ["" if text is None else text for text in strings]
        joined = "".join(strings)
        if joined.isascii():  # a character is a byte: one encoding for the whole chunk
            lengths = np.fromiter(map(len, strings), np.int64, len(strings))
            data = joined.encode("ascii")
        else:
            encoded = [text.encode("utf-8") for text in strings]
            lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
            data = b"".join(encoded)
        self.fh.write(data)
        self.ends.append(self.at + np.cumsum(lengths))
        self.sizes.append(np.array(sizes, dtype=np.int64))
        self.count += len(strings)
        self.at += len(data)

    def close(self) -> SpilledShard:
        """Put the file in place; where its strings are."""
        self.fh.close()
        os.replace(self.tmp, self.folder / self.name)
        none = [np.zeros(0, np.int64)]
        return SpilledShard(
            self.name,
            np.concatenate(self.ends or none),
            np.concatenate(self.sizes or none),
            np.array(self.nulls, dtype=np.int64),
        )

    def abandon(self) -> None:
        self.fh.close()
        self.tmp.unlink(missing_ok=True)


class SpilledTexts:
    """The spilled shards of one object, joined in order: its results' message counts (`sizes`) and every
    string, read by number (`strings`)."""

    def __init__(self, folder: Path, shards: Sequence[SpilledShard], fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self.paths = [folder / s.file for s in shards]
        for path, shard in zip(self.paths, shards, strict=True):
            expected = int(shard.ends[-1]) if len(shard.ends) else 0
            if not path.is_file():
                raise BuildError(f"{path}, written by a text shard, is missing: {CHANGED}")
            size = path.stat().st_size
            if size != expected:
                raise BuildError(
                    f"{path} holds {size} bytes where its text shard wrote {expected}: {CHANGED}"
                )
        counts = [len(s.ends) for s in shards]
        self.base = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])  # each shard's first string
        none = [np.zeros(0, np.int64)]
        self.ends = np.concatenate([s.ends for s in shards] or none)
        self.sizes = np.concatenate([s.sizes for s in shards] or none)
        self.nulls = np.concatenate([s.nulls + self.base[k] for k, s in enumerate(shards)] or none)
        if int(self.sizes.sum()) * len(self.fields) != len(self.ends):
            raise BuildError(
                f"The text shards wrote {len(self.ends)} texts for {int(self.sizes.sum())} messages of "
                f"{len(self.fields)} fields each."
            )

    @property
    def results(self) -> int:
        return len(self.sizes)

    def strings(self, numbers: np.ndarray) -> list[str | None]:
        """The strings numbered `numbers` (in that order), read from the shards' files."""
        numbers = np.asarray(numbers, dtype=np.int64)
        if not len(numbers):
            return []
        shard = np.searchsorted(self.base, numbers, side="right") - 1
        stops = self.ends[numbers]
        starts = np.where(numbers == self.base[shard], 0, self.ends[numbers - 1])
        maps: dict[int, mmap.mmap | bytes] = {}
        try:
            for k in np.unique(shard).tolist():
                with self.paths[k].open("rb") as fh:
                    # mapped for this call only: the pages it touches leave the process with the map
                    maps[k] = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if self._bytes(k) else b""
            out: list[str | None] = [
                maps[k][a:b].decode("utf-8")
                for k, a, b in zip(shard.tolist(), starts.tolist(), stops.tolist(), strict=True)
            ]
        finally:
            for m in maps.values():
                if isinstance(m, mmap.mmap):
                    m.close()
        if len(self.nulls):
            for i in np.flatnonzero(np.isin(numbers, self.nulls)).tolist():
                out[i] = None
        return out

    def _bytes(self, k: int) -> int:
        """The bytes of shard `k`'s file (an empty file cannot be mapped)."""
        last = int(self.base[k + 1]) - 1
        return int(self.ends[last]) if last >= int(self.base[k]) else 0


@dataclass
class TextFill:
    """The text fields of an object whose texts were spilled, put in a block of its rows as the block is
    written: `fill(rows, start)` is `rows` (the frame's rows from `start` on) with its `columns`, row r getting
    message `messages[r]`'s strings."""

    texts: SpilledTexts
    messages: np.ndarray  # int64: per row of the frame, its message's number

    @property
    def columns(self) -> tuple[str, ...]:
        return self.texts.fields

    def __call__(self, rows: pd.DataFrame, start: int) -> pd.DataFrame:
        mine = self.messages[start : start + len(rows)]
        if len(mine) != len(rows):
            raise ValueError(
                f"rows {start}..{start + len(rows)} are past the {len(self.messages)} rows filled"
            )
        width = len(self.columns)
        # every field of the block's messages read in one pass over the files (message r's field f: r * width + f)
        values = self.texts.strings((mine[:, None] * width + np.arange(width)).ravel())
        out = rows.copy(deep=False)
        for f, name in enumerate(self.columns):
            out[name] = pd.Series(values[f::width], index=rows.index, dtype=object)
        return out
