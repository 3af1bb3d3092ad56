"""Text-fidelity figures: how varied generated text is and how much of a question its article gives away.

Plain functions over lists of strings, shared by the tests that hold the default org to CRMArena's figures,
the text validators and the audit. Words are lower-cased runs of letters and digits (an apostrophe inside a
word keeps it whole: "don't", "women's"), so the figures of CRMArena's released task set and of an orgseed
bundle are measured the same way.

- `distinct_n(texts, n)`: distinct word n-grams over all n-grams of the texts (n-grams never cross texts),
  the "distinct-n" of the text-generation literature. It falls as the sample grows, so compare figures at
  equal sample size (`sample`).
- `repeated_ngrams(texts, n)`: the word n-grams found in the most texts, with the share of texts holding each
  (a template's fixed sentence shows up as an 8-gram in a large share of a field's records).
- `overlap(question, article, n)`: the share of the question's word n-grams that occur in the article; a
  question copied from its article scores 1, a paraphrase close to 0.
- `doublings(text)`: article/determiner doublings such as "My the product" or "a the", which no writer
  should produce (the rule is `schemas.textrules.doublings`, which the writers' checks use too).
"""

from __future__ import annotations

import heapq
import random
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd

from schemas.textrules import DOUBLING, doublings

__all__ = [
    "DOUBLING",
    "RepeatedNgrams",
    "distinct_n",
    "doublings",
    "mean_distinct_n",
    "mean_distinct_n_of",
    "mean_distinct_ns_of",
    "ngrams",
    "overlap",
    "repeated_ngrams",
    "repeated_ngrams_in",
    "sample",
    "sampled_texts",
    "top_ngram_share",
    "verbatim",
    "verbatim_share",
    "words",
]

T = TypeVar("T")
WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def words(text: str | None) -> list[str]:
    return WORD.findall((text or "").lower())


def ngrams(text: str | None, n: int) -> list[tuple[str, ...]]:
    w = words(text)
    return [tuple(w[i : i + n]) for i in range(len(w) - n + 1)]


def distinct_n(texts: Iterable[str | None], n: int) -> float:
    """Distinct word n-grams / all word n-grams of the texts (0.0 when they hold none)."""
    seen: set[tuple[str, ...]] = set()
    total = 0
    for t in texts:
        grams = ngrams(t, n)
        total += len(grams)
        seen.update(grams)
    return len(seen) / total if total else 0.0


def sample(texts: Sequence[T], size: int, seed: int = 0) -> list[T]:
    """`size` texts drawn without replacement by a seeded generator (all of them when there are fewer)."""
    if len(texts) <= size:
        return list(texts)
    return random.Random(seed).sample(list(texts), size)


def mean_distinct_n(texts: Sequence[str], n: int, size: int, draws: int = 5) -> float:
    """The mean distinct-n of `draws` seeded samples of `size` texts: a figure comparable with another
    corpus's distinct-n at that size."""
    if len(texts) <= size:
        return distinct_n(texts, n)
    return sum(distinct_n(sample(texts, size, seed), n) for seed in range(draws)) / draws


def sampled_texts(
    batches: Batches,
    count: int,
    size: int,
    draws: int = 5,
    each: Callable[[Sequence[str | None]], None] | None = None,
) -> list[list[str | None]]:
    """The texts of `sample(texts, size, seed)` for seeds 0 to `draws - 1`, where `texts` is the `count`
    texts `batches()` yields, reading them once in batches: `random.sample` draws its positions from the
    population's length alone, so sampling `range(count)` picks the same positions. With `count <= size`,
    one list of every text (what `mean_distinct_n` measures whole). `each` is called with every batch read
    (so that another pass over the texts can share this one)."""
    if count <= size:
        whole: list[str | None] = []
        for batch in batches():
            if each is not None:
                each(batch)
            whole.extend(batch)
        return [whole]
    picks = [sample(range(count), size, seed) for seed in range(draws)]
    wanted = {i for p in picks for i in p}
    found: dict[int, str | None] = {}
    at = 0
    for batch in batches():
        if each is not None:
            each(batch)
        for t in batch:
            if at in wanted:
                found[at] = t
            at += 1
    return [[found[i] for i in p] for p in picks]


def mean_distinct_n_of(samples: Sequence[Sequence[str | None]], n: int) -> float:
    """`mean_distinct_n` from the samples `sampled_texts` drew (one list: the texts whole)."""
    return sum(distinct_n(s, n) for s in samples) / len(samples)


def mean_distinct_ns_of(samples: Sequence[Sequence[str | None]], ns: Sequence[int]) -> list[float]:
    """`[mean_distinct_n_of(samples, n) for n in ns]`: each sample split into words once (one regex pass,
    `_slice_tokens`), its words numbered, and each n-gram packed into one integer from its words' numbers
    (exactly: no two n-grams share one while vocabulary ** n < 2 ** 63), counted distinct with numpy."""
    per_sample = [_distinct_ns(s, ns) for s in samples]
    return [sum(p[k] for p in per_sample) / len(samples) for k in range(len(ns))]


def _distinct_ns(texts: Sequence[str | None], ns: Sequence[int]) -> list[float]:
    """`distinct_n(texts, n)` for each n of `ns`."""
    tokens = _slice_words(texts).split()
    codes, vocabulary = pd.factorize(np.array(tokens, dtype=object))
    codes = codes.astype(np.int64)
    size = max(len(vocabulary), 1)
    sep = np.zeros(len(tokens) + 1, dtype=np.int64)  # separators before each token
    if _SEP.encode() in set(vocabulary.tolist()):
        np.cumsum(codes == vocabulary.tolist().index(_SEP.encode()), out=sep[1:])
    out = []
    for n in ns:
        m = len(tokens) - n + 1
        if m <= 0:
            out.append(0.0)
            continue
        if size**n >= 1 << 63:  # too many words to pack n of them: the definition
            out.append(distinct_n(texts, n))
            continue
        packed = codes[:m].copy()
        for k in range(1, n):
            packed *= size
            packed += codes[k : k + m]
        whole = sep[n : n + m] == sep[:m]  # no separator among the n words
        grams = int(whole.sum())
        out.append(len(_sorted_distinct(packed[whole])) / grams if grams else 0.0)
    return out


def repeated_ngrams(texts: Sequence[str | None], n: int = 8, top: int = 5) -> list[tuple[str, float]]:
    """The `top` word n-grams held by the most texts, each with the share of texts holding it (ties: the
    n-gram's words in order)."""
    return repeated_ngrams_in(lambda: [texts], n, top)


Batches = Callable[[], Iterable[Sequence[str | None]]]  # each call reads the texts anew, in batches

COMPACT_AT = 1 << 20  # n-gram hashes buffered before they are counted and spilled (`_Spill`)
TEXT_BITS = 10  # the low bits of a (hash, text) key: the text's number in its slice
SLICE = 1 << TEXT_BITS  # texts tokenised together (bounds the token arrays held at once)
# bits of an n-gram's hash (the high bits of its words' hashes as digits base _MIX)
_HASH_BITS = 64 - TEXT_BITS
_SEP = "\x00"  # joins a slice's texts: WORD never matches it, so no word or n-gram spans two texts
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|\x00")  # WORD, or a text boundary
_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
# for `bytes.translate`: ASCII letters lower-cased, digits, apostrophes and _SEP kept, every other byte a space
_WORD_BYTES = bytes(
    ord(c.lower()) if c.isascii() and (c.isalnum() or c in "'" + _SEP) else ord(" ")
    for c in map(chr, range(256))
)
# after an apostrophe that joins two words, a digit or another apostrophe in the word: WORD ends the word there
_QUOTED_ON = re.compile(rb"'[a-z]+[0-9']")
_PAD = b" " * 8  # after a slice's words: each word's last 8-byte window ends inside the slice


def _slice_tokens(texts: Sequence[str | None]) -> list[str]:
    """The words of each of `texts` in order, the texts' word lists separated by `_SEP`: `words` of each,
    tokenised in one pass over the joined text (lower-casing is per character but for the Greek final
    sigma, which WORD never matches, so joining changes no word)."""
    parts = [t or "" for t in texts]
    if any(_SEP in p for p in parts):  # a text holding the separator itself: tokenise text by text
        out: list[str] = []
        for k, p in enumerate(parts):
            if k:
                out.append(_SEP)
            out.extend(words(p))
        return out
    return _TOKEN.findall(_SEP.join(parts).lower())


def _slice_words(texts: Sequence[str | None]) -> bytes:
    """`_slice_tokens(texts)` as ASCII (WORD matches ASCII only), the tokens between spaces, a space before
    and `_PAD` after: in one `bytes.translate` where the texts are ASCII and the apostrophes simple (at most one
    inside a word, between a letter or digit and letters: "don't", "kids'", "'cancel'"), else from
    `_slice_tokens`."""
    parts = [t or "" for t in texts]
    joined = f" {_SEP} ".join(parts)
    if parts and joined.isascii() and joined.count(_SEP) == len(parts) - 1:
        out = bytearray(b" " + joined.encode("ascii").translate(_WORD_BYTES) + _PAD)
        chars = np.frombuffer(out, dtype=np.uint8)
        quotes = np.flatnonzero(chars == ord("'"))
        # an apostrophe is inside a word after a letter or digit and before a letter, else it is a gap
        # (the bytes are now spaces, _SEP, apostrophes, digits and lower-case letters, in that order)
        joins = (chars[quotes - 1] > ord("'")) & (chars[quotes + 1] >= ord("a"))
        chars[quotes[~joins]] = ord(" ")
        if not _QUOTED_ON.search(out):
            return bytes(out)
    return b" " + " ".join(_slice_tokens(texts)).encode("ascii") + _PAD


def _finish(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser: every bit of a word's packed bytes moves every bit of its hash."""
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


def _word_hashes(words: bytes, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """A hash of each word of `words` (`_slice_words`) from its bytes, read 8 at a time."""
    windows = np.ndarray((len(words) - 7,), dtype="<u8", buffer=words, strides=(1,))  # 8 bytes from each byte

    def chunk(at: np.ndarray, left: np.ndarray) -> np.ndarray:  # the next 8 bytes, those past the word zeroed
        return windows[at] & (_ONES >> (64 - 8 * np.minimum(left, 8)).astype(np.uint64))

    h = chunk(starts, lengths)
    long = np.flatnonzero(lengths > 8)
    done = 8
    while len(long):
        h[long] = h[long] * _MIX + chunk(starts[long] + done, lengths[long] - done)
        done += 8
        long = long[lengths[long] > done]
    return _finish(h)


def _slice_grams(words: bytes, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(hash, text, first byte, end byte) of every word n-gram of a slice's `words` (`_slice_words`), in text
    order: the hashes have `_HASH_BITS` bits, `text` counts the texts before it in the slice, and the bytes
    span the n-gram's words in `words`."""
    chars = np.frombuffer(words, dtype=np.uint8)
    inside = chars != ord(" ")
    edges = np.flatnonzero(inside[1:] != inside[:-1]) + 1  # the space before and after: starts, ends
    starts, ends = edges[::2], edges[1::2]
    m = len(starts) - n + 1
    if m <= 0:
        empty = np.empty(0, dtype=np.int64)
        return empty.view(np.uint64), empty, empty, empty
    word = _word_hashes(words, starts, ends - starts)
    seps = np.concatenate(([0], np.cumsum(chars[starts] == 0, dtype=np.int64)))  # separators before each
    grams = word[:m].copy()
    for k in range(1, n):
        grams *= _MIX
        grams += word[k : k + m]
    first = np.flatnonzero(seps[n : n + m] == seps[:m])  # no separator among the n words
    return grams[first] >> np.uint64(TEXT_BITS), seps[first], starts[first], ends[first + n - 1]


class RepeatedNgrams:
    """`repeated_ngrams_in`, fed batch by batch, so that a caller reading the texts anyway (the fidelity report
    counts and samples them too) reads them no more often: `bound(batch)` for every batch, then, while
    `exact_pass()` is true, `exact(batch)` for every batch (the same batches, in the same order); `result()`;
    `close()` (or the counter's collection) removes what it spilled.

    Memory is bounded by the buffers, not by the texts' n-grams: once COMPACT_AT hashes are buffered, they are
    counted and spilled to files of a temporary folder (in `spill_dir`, default the system's), one per range
    of hash values (`_Spill`), and the counts are summed a range at a time. The first pass also keeps, per
    text, the top 16 bits of each n-gram hash it holds (2 bytes an n-gram), spilled with them: an exact pass
    splits into words only the texts holding a fingerprint of a wanted hash (every text holding a wanted
    n-gram does), not every text again."""

    def __init__(self, n: int, top: int, spill_dir: str | Path | None = None) -> None:
        self.n, self.top = n, top
        self.total = 0
        self._spill = _Spill(spill_dir)
        self._threshold: int | None = None
        self._wanted = np.empty(0, dtype=np.uint64)
        self._wanted_prints = np.zeros(1 << 16, dtype=bool)  # by fingerprint: whether a wanted hash has it
        # n-gram (its words between single spaces, ASCII: ordered as its words are, a space sorting before
        # every byte of a word) → texts holding it
        self._exact: Counter[bytes] = Counter()
        self._ranked: list[tuple[bytes, int]] | None = None
        self._slice_at = 0  # the next slice an exact pass reads

    def bound(self, batch: Sequence[str | None]) -> None:
        """First pass: per hash of an n-gram, the texts holding an n-gram with that hash (an upper bound of
        each n-gram's own count: a collision can only add)."""
        self.total += len(batch)
        for at in range(0, len(batch), SLICE):
            part = batch[at : at + SLICE]
            grams, texts, _, _ = _slice_grams(_slice_words(part), self.n)
            prints = (grams >> np.uint64(_HASH_BITS - 16)).astype(np.uint16)
            # one per (hash, text), sorted by hash
            held = _sorted_distinct((grams << np.uint64(TEXT_BITS)) | texts.astype(np.uint64))
            self._spill.add(
                held >> np.uint64(TEXT_BITS), len(part), prints, np.bincount(texts, minlength=len(part))
            )

    def exact_pass(self) -> bool:
        """Whether another pass of `exact` is needed (and its start): the first time, after the bounds; again
        should a collision have pushed the threshold above the exact `top`-th count."""
        if self._threshold is None:
            if not self.total or self.top <= 0:
                self._ranked = []
                return False
            found = self._spill.threshold(self.top)
            if found is None:  # no n-gram at all
                self._ranked = []
                return False
            self._threshold, self._wanted = found
        else:
            ranked = self._rank()
            if len(ranked) == self.top and ranked[-1][1] >= self._threshold:
                self._ranked = ranked  # every n-gram left out is held by fewer texts than the last ranked
                return False
            lowered = ranked[-1][1] if len(ranked) == self.top else 1
            if lowered >= self._threshold:
                self._ranked = ranked  # threshold 1: every n-gram was counted
                return False
            self._threshold = lowered
            self._wanted = self._spill.reaching(lowered)
        self._wanted_prints = np.zeros(1 << 16, dtype=bool)
        self._wanted_prints[self._wanted >> np.uint64(_HASH_BITS - 16)] = True
        self._exact = Counter()
        self._slice_at = 0
        return True

    def exact(self, batch: Sequence[str | None]) -> None:
        """A pass counting exactly the n-grams whose hash reaches the threshold, once per text holding each."""
        n = self.n
        for at in range(0, len(batch), SLICE):
            part = batch[at : at + SLICE]
            size, prints, held = self._spill.prints(self._slice_at)
            self._slice_at += 1
            if size != len(part):
                raise ValueError("RepeatedNgrams.exact: the batches differ from those of the first pass")
            hits = self._wanted_prints[prints]
            if not hits.any():
                continue
            owners = np.repeat(np.arange(size), held)
            chosen = np.unique(owners[hits]).tolist()  # the texts holding a wanted fingerprint
            words = _slice_words([part[i] for i in chosen])
            grams, texts, begins, ends = _slice_grams(words, n)
            where = np.searchsorted(self._wanted, grams)
            where[where == len(self._wanted)] = 0
            hit = np.flatnonzero(self._wanted[where] == grams)
            found = {
                (t, b" ".join(words[b:e].split()))
                for t, b, e in zip(texts[hit].tolist(), begins[hit].tolist(), ends[hit].tolist(), strict=True)
            }
            self._exact.update(g for _, g in found)

    def _rank(self) -> list[tuple[bytes, int]]:
        return heapq.nsmallest(self.top, self._exact.items(), key=lambda kv: (-kv[1], kv[0]))

    def result(self) -> list[tuple[str, float]]:
        assert self._ranked is not None, "exact_pass() has not said the passes are done"
        return [(g.decode("ascii"), c / self.total) for g, c in self._ranked]

    def close(self) -> None:
        """Remove the spilled files (the counter cannot be used after)."""
        self._spill.close()


PARTITION_BITS = 8  # a spilled range splits into 2 ** PARTITION_BITS ranges of hash values
PARTITION_ROWS = 1 << 22  # (hash, count) rows of one range counted at once; a larger range is split again
_ROW = np.dtype([("hash", "<u8"), ("count", "<u4")])
SPILL_FAILED = (
    "The text-fidelity figures could not spill their n-gram counts to a temporary folder; point TMPDIR at a "
    "writable folder with free space (the emails' bodies spill ~0.2 GB at scale 300, one field at a time)"
)


class _Spill:
    """The first pass's (hash, texts holding it) counts and per-slice fingerprints, held while they are few
    and spilled once COMPACT_AT hashes are buffered. Each spill counts the buffered hashes (sorted, a row per
    distinct hash) and appends each range of hash values (the top PARTITION_BITS bits) to that range's file.
    A range's file is read whole to sum its rows' counts, so the memory held is one range's rows: a range of
    more than PARTITION_ROWS rows is first split by its next PARTITION_BITS bits, into a folder of its own,
    until the bits run out."""

    def __init__(self, spill_dir: str | Path | None) -> None:
        self.spill_dir = spill_dir
        self.folder: tempfile.TemporaryDirectory[str] | None = None
        self.buffer: list[np.ndarray] = []
        self.buffered = 0
        # per slice: (texts, fingerprints, n-grams each text holds) while held, or (texts, offset of its
        # fingerprints, their count, offset of its texts' n-gram counts) once spilled
        self.slices: list[tuple[int, np.ndarray, np.ndarray] | tuple[int, int, int, int]] = []
        self.prints_at = self.held_at = 0
        self.spilled = False
        # the held hashes counted, when they were never spilled (counted once, read by each scan)
        self.counted: tuple[np.ndarray, np.ndarray] | None = None

    # ----- the first pass
    def add(self, hashes: np.ndarray, size: int, prints: np.ndarray, held: np.ndarray) -> None:
        self.buffer.append(hashes)
        self.buffered += len(hashes)
        self.slices.append((size, prints, held))
        if self.buffered >= COMPACT_AT:
            self._spill()

    def _root(self) -> Path:
        if self.folder is None:
            try:
                self.folder = tempfile.TemporaryDirectory(prefix="orgseed-ngrams-", dir=self.spill_dir)
            except OSError as exc:
                raise OSError(f"{SPILL_FAILED} ({exc})") from exc
        return Path(self.folder.name)

    def _counted_buffer(self) -> tuple[np.ndarray, np.ndarray]:
        more = np.sort(np.concatenate(self.buffer) if self.buffer else np.empty(0, np.uint64), kind="stable")
        self.buffer, self.buffered = [], 0
        first = _firsts(more)
        times = np.diff(np.flatnonzero(np.append(first, True)))  # how many of each
        return more[first], times

    def _spill(self) -> None:
        root = self._root()
        try:
            self._write(root)
        except OSError as exc:
            raise OSError(f"{SPILL_FAILED}: {root} ({exc})") from exc

    def _write(self, root: Path) -> None:
        keys, times = self._counted_buffer()
        rows = np.empty(len(keys), dtype=_ROW)
        rows["hash"], rows["count"] = keys, times
        ranges = keys >> np.uint64(_HASH_BITS - PARTITION_BITS)
        bounds = np.searchsorted(ranges, np.arange(1 << PARTITION_BITS, dtype=np.uint64))
        bounds = np.append(bounds, len(keys))
        for r in np.flatnonzero(np.diff(bounds)).tolist():
            with (root / f"{r:03d}.bin").open("ab") as fh:
                rows[bounds[r] : bounds[r + 1]].tofile(fh)
        with (root / "prints.bin").open("ab") as pf, (root / "held.bin").open("ab") as hf:
            for i, entry in enumerate(self.slices):
                if len(entry) == 3:
                    size, prints, held = entry
                    prints.astype("<u2").tofile(pf)
                    held.astype("<i8").tofile(hf)
                    self.slices[i] = (size, self.prints_at, len(prints), self.held_at)
                    self.prints_at += 2 * len(prints)
                    self.held_at += 8 * len(held)
        self.spilled = True

    # ----- the counts, a range at a time
    def _ranges(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Each range's distinct hashes (sorted) and the texts holding each, in hash order."""
        if not self.spilled:  # all held: counted once, kept for a second scan
            if self.counted is None:
                self.counted = self._counted_buffer()
            if len(self.counted[0]):
                yield self.counted
            return
        if self.buffer:
            self._spill()
        root = self._root()
        for r in range(1 << PARTITION_BITS):
            yield from _range_counts(root / f"{r:03d}.bin", 1)

    def threshold(self, top: int) -> tuple[int, np.ndarray] | None:
        """The `top`-th largest count (the smallest when fewer hashes), and the hashes reaching it (sorted);
        None when there is no hash."""
        best: list[int] = []  # the `top` largest counts seen, a min-heap
        kept: list[tuple[np.ndarray, np.ndarray]] = []
        for keys, counts in self._ranges():
            for c in np.sort(counts)[-top:].tolist():
                if len(best) < top:
                    heapq.heappush(best, c)
                elif c > best[0]:
                    heapq.heapreplace(best, c)
            floor = best[0] if len(best) == top else 1  # at most the final threshold
            reach = counts >= floor
            kept.append((keys[reach], counts[reach]))
        if not best:
            return None
        threshold = best[0]
        return threshold, np.concatenate([k[c >= threshold] for k, c in kept])

    def reaching(self, threshold: int) -> np.ndarray:
        """The hashes held by at least `threshold` texts (sorted)."""
        return np.concatenate([k[c >= threshold] for k, c in self._ranges()] or [np.empty(0, np.uint64)])

    # ----- the exact passes
    def prints(self, i: int) -> tuple[int, np.ndarray, np.ndarray]:
        entry = self.slices[i]
        if len(entry) == 3:
            return entry
        size, prints_at, count, held_at = entry
        root = self._root()
        prints = np.fromfile(root / "prints.bin", dtype="<u2", count=count, offset=prints_at)
        held = np.fromfile(root / "held.bin", dtype="<i8", count=size, offset=held_at)
        return size, prints, held

    def close(self) -> None:
        self.buffer, self.slices, self.counted = [], [], None
        if self.folder is not None:
            self.folder.cleanup()
            self.folder = None


def _range_counts(path: Path, depth: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The distinct hashes of a range's file (or of the folder it was split into) and their summed counts."""
    folder = path.with_suffix("")
    if folder.is_dir():
        for sub in range(1 << PARTITION_BITS):
            yield from _range_counts(folder / f"{sub:03d}.bin", depth + 1)
        return
    if not path.exists():
        return
    rows = path.stat().st_size // _ROW.itemsize
    if rows > PARTITION_ROWS and (depth + 1) * PARTITION_BITS <= _HASH_BITS:
        _split(path, folder, depth)
        yield from _range_counts(path, depth)
        return
    got = np.fromfile(path, dtype=_ROW)
    order = np.argsort(got["hash"], kind="stable")
    keys, counts = got["hash"][order], got["count"][order].astype(np.int64)
    del got, order
    first = np.flatnonzero(_firsts(keys))
    yield keys[first], np.add.reduceat(counts, first) if len(first) else counts


def _split(path: Path, folder: Path, depth: int) -> None:
    """A range's file split by the next PARTITION_BITS bits of its hashes into `folder`, PARTITION_ROWS rows
    read at a time; the file is removed once split."""
    folder.mkdir()
    shift = np.uint64(_HASH_BITS - (depth + 1) * PARTITION_BITS)
    mask = np.uint64((1 << PARTITION_BITS) - 1)
    rows = path.stat().st_size // _ROW.itemsize
    for at in range(0, rows, PARTITION_ROWS):
        got = np.fromfile(path, dtype=_ROW, count=min(PARTITION_ROWS, rows - at), offset=at * _ROW.itemsize)
        sub = (got["hash"] >> shift) & mask
        order = np.argsort(sub, kind="stable")
        got, sub = got[order], sub[order]
        bounds = np.append(np.searchsorted(sub, np.arange(1 << PARTITION_BITS, dtype=np.uint64)), len(sub))
        for r in np.flatnonzero(np.diff(bounds)).tolist():
            with (folder / f"{r:03d}.bin").open("ab") as fh:
                got[bounds[r] : bounds[r + 1]].tofile(fh)
    path.unlink()


def repeated_ngrams_in(batches: Batches, n: int = 8, top: int = 5) -> list[tuple[str, float]]:
    """`repeated_ngrams` of the texts `batches()` yields, in memory bounded by the counter's buffers and one
    range of hash values at a time (`RepeatedNgrams` spills the counts to disk), rather than by the n-grams
    themselves (a tuple of word strings each, ~0.5 kB: 180 MB of a scale-30 build's peak was that Counter) or
    by the distinct n-grams (at scale 1,000, tens of millions for the chats' bodies).

    Two passes. The first counts, per hash of an n-gram, the texts holding an n-gram with that hash: an upper
    bound of each n-gram's own count (a collision can only add). The second counts exactly the n-grams
    whose hash reaches the `top`-th largest bound, and ranks them; should a collision have pushed the
    threshold above the exact `top`-th count, the second pass runs again with the threshold lowered to that
    count, so every n-gram that can rank is counted exactly: the result is `repeated_ngrams`'s, exactly.

    Each slice of texts is reduced to its words by one `bytes.translate` (`_slice_words`) and its words and
    n-grams hashed with numpy from those bytes (`_slice_grams`), not built as strings and tuples of words:
    only the n-grams that can rank are."""
    counter = RepeatedNgrams(n, top)
    try:
        for batch in batches():
            counter.bound(batch)
        while counter.exact_pass():
            for batch in batches():
                counter.exact(batch)
        return counter.result()
    finally:
        counter.close()


def _sorted_distinct(values: np.ndarray) -> np.ndarray:
    """`np.unique(values)` by sorting: numpy's hash table (numpy >= 2.3) is several times slower on these
    arrays of hashes."""
    values = np.sort(values)
    return values[_firsts(values)]


def _firsts(values: np.ndarray) -> np.ndarray:
    """Whether each of the sorted `values` differs from the one before it."""
    first = np.ones(len(values), dtype=bool)
    first[1:] = values[1:] != values[:-1]
    return first


def top_ngram_share(texts: Sequence[str | None], n: int = 8) -> float:
    """The share of texts holding the most widely shared word n-gram (0.0 when none repeats)."""
    top = repeated_ngrams(texts, n, 1)
    return top[0][1] if top else 0.0


def overlap(question: str, article: str, n: int = 4) -> float:
    """The share of the question's word n-grams that occur in the article (0.0 for a question shorter than n)."""
    return _share_held(ngrams(question, n), set(ngrams(article, n)))


def _share_held(grams: list[tuple[str, ...]], held: set[tuple[str, ...]]) -> float:
    return sum(g in held for g in grams) / len(grams) if grams else 0.0


# A question whose 4-grams mostly occur in its article was copied from it, not paraphrased.
VERBATIM_OVERLAP = 0.5


def verbatim(question: str, article: str) -> bool:
    return overlap(question, article) > VERBATIM_OVERLAP


def verbatim_share(pairs: Sequence[tuple[str, str]]) -> float:
    """The share of (question, article) pairs whose question is mostly verbatim in its article (`verbatim`;
    each article's 4-grams gathered once, as questions share articles)."""
    if not pairs:
        return 0.0
    held = {a: set(ngrams(a, 4)) for a in {a for _, a in pairs}}
    return sum(_share_held(ngrams(q, 4), held[a]) > VERBATIM_OVERLAP for q, a in pairs) / len(pairs)
