"""Text similarity shared by the writers (which regenerate near-duplicates) and the validators (which report
them), so both agree exactly on what a near-duplicate is.

A text's shingles are its lower-cased word 3-grams. Two texts are near-duplicates when the Jaccard similarity
of their shingle sets is at least the threshold (0.5 by default: the reference measured that 0.5 on word
3-shingles catches light paraphrases that 0.7–0.9 miss).

Finding pairs fast enough for tens of thousands of texts: every distinct word is hashed once (BLAKE2b, 64
bits) and each shingle's hash is a fixed mix of its words' hashes, all in numpy (`shingle_hashes`). Three
further fixed 64-bit mixes each spread a text's shingles over 32 bins and keep the minimum per bin
(one-permutation hashing, with rotation densification for empty bins), giving a 96-value MinHash-like
signature per text. Signatures are banded 32 × 3 for locality-sensitive hashing, band b taking bin b of each
of the three sketches (a pair with Jaccard 0.5 becomes a candidate with probability ≈ 1 − (1 − 0.5³)³² ≈
0.986, 0.55 with ≈ 0.996). The three values of a band come from independent sketches: three neighbouring bins
of one sketch are often copies of one shingle's value (densification fills an empty bin from its right-hand
neighbour), so texts sharing a common phrase met in bands of neighbours far more often than J³, and at scale
300 the groups of texts sharing a band key reached thousands of members, compared pair by pair. Candidates whose
signatures agree on fewer than 35% of the values (compared by their top 16 bits) are dropped, and every
remaining candidate is decided by
the exact Jaccard similarity of the two shingle-hash sets (equal to that of the shingle strings unless two
distinct shingles share a 64-bit hash), computed for all candidates at once in numpy. The hashes are fixed, so
the result is the same on every run and in every process.

Why not datasketch: computing 128-permutation MinHashes costs ~70 µs per text in its per-document loop
(3.5 s for the 9,770 case descriptions of a scale-10 org, measured); one hash per shingle is ~10× cheaper.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

WORD = re.compile(r"\w+")
# ASCII text: every byte that is not a word character ([A-Za-z0-9_], what `\w` matches in ASCII) becomes a
# space, and the words are what bytes.split() leaves: the same words as WORD.findall, ~2x faster.
_ASCII_WORDS = bytes(
    c if chr(c).isascii() and (chr(c).isalnum() or c == ord("_")) else 32 for c in range(256)
)
DEFAULT_THRESHOLD = 0.5
BINS = 32  # per sketch
SKETCHES = 3
WIDTH = BINS * SKETCHES
BANDS, ROWS = 32, 3
# band b's values: bin b of each sketch
BAND_COLUMNS = [[k * BINS + b for k in range(SKETCHES)] for b in range(BANDS)]
MIN_AGREEMENT = 0.35
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0xD6E8FEB86659FD93))
_ADD = (np.uint64(0x632BE59BD9B4E019), np.uint64(0x85EBCA77C2B2AE63), np.uint64(0x27D4EB2F165667C5))
_EMPTY = np.uint64(2**64 - 1)


def shingles(text: str | None, k: int = 3) -> frozenset[str]:
    words = WORD.findall((text or "").lower())
    if len(words) < k:
        return frozenset([" ".join(words)]) if words else frozenset()
    return frozenset(" ".join(words[i : i + k]) for i in range(len(words) - k + 1))


def jaccard(a: AbstractSet[Any], b: AbstractSet[Any]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _densify(block: np.ndarray) -> np.ndarray:
    """Fill each empty bin from the next non-empty bin to its right (circularly), offset by the distance.

    Vectorised: the block is laid twice side by side, and for every column the nearest non-empty column at or
    after it is a running minimum from the right; a row with no non-empty bin stays empty."""
    empty = block == _EMPTY
    if not empty.any():
        return block.copy()
    n = block.shape[1]
    twice = np.concatenate((block, block), axis=1)
    columns = np.arange(2 * n)
    nearest = np.where(np.concatenate((~empty, ~empty), axis=1), columns, 2 * n)
    nearest = np.minimum.accumulate(nearest[:, ::-1], axis=1)[:, ::-1][:, :n]
    found = nearest < 2 * n
    rows = np.nonzero(empty & found)
    source = nearest[rows]
    distance = (source - rows[1]).astype(np.uint64)
    out = block.copy()
    out[rows] = twice[rows[0], source] + distance * np.uint64(0x1000193)
    return out


def _unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (np.unique picks a hash table for integers, ~40× slower here than sorting)."""
    s = np.sort(values)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if len(s) else s


_NO_PAIRS = np.zeros(0, dtype=np.int64)  # no packed pairs (read only: `_merge` makes a new array)
_NO_PAIRS.setflags(write=False)


def _merge(packed: np.ndarray, pending: list[np.ndarray]) -> np.ndarray:
    """`_unique` of `packed` and the `pending` arrays (emptied), sorted in place: at most twice their size
    held, not four times."""
    merged = np.concatenate([packed, *pending])
    pending.clear()
    del packed
    merged.sort()
    return merged[np.concatenate(([True], merged[1:] != merged[:-1]))] if len(merged) else merged


def _word_hash(word: bytes) -> int:
    """The word's hash: BLAKE2b (64 bits) of its UTF-8 bytes."""
    return int.from_bytes(hashlib.blake2b(word, digest_size=8).digest(), "little")


class _WordHashes(dict[bytes, int]):
    """A word's UTF-8 bytes -> its hash (`_word_hash`), computed on its first lookup and kept: looking up a
    text's words in C (`map(hashes.__getitem__, words)`) hashes only the words never seen."""

    def __missing__(self, word: bytes) -> int:
        value = self[word] = _word_hash(word)
        return value


_WORD_HASH = _WordHashes()


# Texts whose shingles are hashed together: the arrays of one batch are a few per word, so memory is bounded
# by the batch, not by all the texts (which at scale 100 hold millions of words).
BATCH_TEXTS = 4096
# candidate pairs waiting before they are made distinct and settled (`pair_arrays`), or a first pass's distinct
# hashes waiting before they are merged: a merge holds them about three times over (8 bytes each), ~50 MB at 2 M
# (4 M held ~40 MB more at the peak of a search of scale 300's cases, for no measurable gain in time)
MERGE_PENDING = 1 << 21
# candidate pairs whose signatures are compared at a time: each one gathers both rows' 96 values twice (as bytes,
# then as 16-bit tops), ~0.6 KB per pair, so 8,192 pairs hold ~8 MB (65,536 held ~60 MB at scale 30's cases)
AGREEMENT_CHUNK = 8192
# candidate pairs whose exact Jaccard similarity is computed at a time (`_jaccards`): ~100 shingles per pair, as
# 8-byte keys made, gathered and sorted together, ~20 MB per chunk at 8,192 (32,768 held ~80 MB more at the peak
# of a search of scale 300's cases, for no measurable gain in time)
EXACT_CHUNK = 1 << 13
# agreeing candidate pairs given to the exact check at a time (`pair_arrays`), which keeps only the pairs found
EXACT_SLICE = 1 << 20
# codes moved at a time when the replaced rows' old segments are dropped (`_compact`): 8 bytes of index each
COMPACT_CHUNK = 1 << 20


def shingle_hashes(texts: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """Every text's shingles as 64-bit hashes: (hashes, offsets), text i owning hashes[offsets[i]:offsets[i+1]].

    The hash of a shingle is a fixed function of its words' hashes and of how many words it has, so two
    shingles get the same hash exactly when they are the same words (up to a 64-bit collision: with a million
    distinct shingles the chance that any two collide is below 10⁻⁷). Repeats within a text are kept; sets
    drop them. Each word's hash (BLAKE2b, 64 bits) is computed once per distinct word and kept for the process;
    texts are hashed in batches of BATCH_TEXTS, each text's shingles depending on that text alone.
    """
    parts: list[np.ndarray] = []
    lengths: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    for _, hashes, per_text in _hash_batches(texts):
        parts.append(hashes)
        lengths.append(per_text)
    offsets = np.concatenate(([0], np.cumsum(np.concatenate(lengths))))
    if not parts:
        return np.zeros(0, dtype=np.uint64), offsets
    return (parts[0] if len(parts) == 1 else np.concatenate(parts)), offsets


def _hash_batches(texts: Sequence[str | None]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """`shingle_hashes` a batch of BATCH_TEXTS texts at a time: (their rows, their shingles' hashes in row
    order, each text's count of them)."""
    counts = np.zeros(len(texts), dtype=np.int64)
    for lo in range(0, len(texts), BATCH_TEXTS):
        hi = min(len(texts), lo + BATCH_TEXTS)
        hashes = _batch_hashes(texts, lo, hi, counts)
        words = counts[lo:hi]
        yield np.arange(lo, hi, dtype=np.int64), hashes, np.where(words >= 3, words - 2, np.minimum(words, 1))


def _batch_hashes(texts: Sequence[str | None], lo: int, hi: int, counts: np.ndarray) -> np.ndarray:
    """The shingle hashes of texts[lo:hi], in order; fills counts[lo:hi] with each text's word count."""
    cache = _WORD_HASH
    words = array("Q")
    for i in range(lo, hi):
        text = texts[i]
        if text:
            low = text.lower()
            if low.isascii():
                found = low.encode("ascii").translate(_ASCII_WORDS).split()
            else:
                found = [w.encode() for w in WORD.findall(low)]
            words.extend(map(cache.__getitem__, found))
            counts[i] = len(found)
    n = len(words)
    if not n:
        return np.zeros(0, dtype=np.uint64)
    h = np.concatenate((np.frombuffer(words, dtype=np.uint64), np.zeros(2, dtype=np.uint64)))
    del words
    batch = counts[lo:hi]
    owner = np.repeat(np.arange(hi - lo), batch)
    length = batch[owner]
    position = np.arange(n) - (np.cumsum(batch) - batch)[owner]
    starts = (position <= length - 3) | ((position == 0) & (length < 3))
    del owner, position
    size = np.minimum(length, 3).astype(np.uint64)
    with np.errstate(over="ignore"):
        s = (size ^ h[:n]) * _MIX[0]
        s = (s ^ np.where(length >= 2, h[1 : n + 1], np.uint64(0))) * _MIX[1]
        s = (s ^ np.where(length >= 3, h[2 : n + 2], np.uint64(0))) * _MIX[2]
    s ^= s >> np.uint64(31)
    return s[starts]


def _segments(
    flat: np.ndarray, ptr: np.ndarray, at: np.ndarray, lengths: np.ndarray, pair: np.ndarray, distinct: int
) -> np.ndarray:
    """Keys pair·distinct + id of the rows `at` (positions into `ptr`), one segment per pair, in pair order:
    flat[ptr[at[k]] : ptr[at[k] + 1]] for each k (sorted, so the result is sorted)."""
    total = int(lengths.sum())
    starts = ptr[at] - (np.cumsum(lengths) - lengths)
    index = np.repeat(starts, lengths) + np.arange(total)
    return np.repeat(pair * distinct, lengths) + flat[index]


def _owned(a: np.ndarray) -> np.ndarray:
    """`a`, or a copy of it when it does not own its memory (only an array owning it can be resized)."""
    return a if a.flags.owndata else a.copy()


def _appended(a: np.ndarray, parts: Sequence[np.ndarray]) -> np.ndarray:
    """`np.concatenate([a, *parts])`, made by growing `a` in place: the allocator moves a large block's pages
    rather than copying them, so `a` is not held twice (the codes of the cases were copied whole for every round
    of rewriting: ~55 MB at scale 300, ~190 MB at scale 1,000, and the replaced rows' old codes with them). `a`
    must not be used after: the result replaces it."""
    end = len(a)
    out = _owned(a)
    out.resize(end + sum(len(p) for p in parts), refcheck=False)
    for p in parts:
        out[end : end + len(p)] = p
        end += len(p)
    return out


def _pack(i: np.ndarray, j: np.ndarray, stride: int) -> np.ndarray:
    """Pairs (i, j) as min * stride + max."""
    return np.minimum(i, j).astype(np.int64) * stride + np.maximum(i, j)


class NearDuplicateIndex:
    """Signatures of a list of texts; texts can be replaced and pairs re-queried cheaply.

    Each row's distinct shingles are held numbered, not as hashes: the distinct hashes of the first texts are
    numbered in sorted order (`_vocab`: code = position), hashes first met in replaced texts after them, in the
    order met (`_added`). The rows' sorted distinct codes are one flat int32 array (`_codes`), a row's segment
    at `_start[row]`, `_size[row]` long; a replaced row's new segment is appended (the old one is garbage until
    the array is compacted). Codes stand one for one for hashes, so Jaccard similarities on codes are those on
    hashes; the exact check (`_jaccards`) then sorts a chunk of pairs' codes, without first numbering every
    shingle of every candidate row (which held ~300 MB beside the index for scale 300's 293,100 cases)."""

    def __init__(self, texts: Sequence[str | None], threshold: float = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold
        n = len(texts)
        # what the search reads of each text's signature (`signatures`): the band keys (`band_keys`, their top 32
        # bits), and the values' top 16 bits, which the agreement compares: 320 bytes a text instead of the 768
        # of the signature itself (640 with 64-bit keys and 32-bit values: ~310 MB more for scale 1,000's
        # cases, in the process making them and in validation's). Narrower, they only add candidates, which
        # the exact check decides: two keys of a band collide with probability 2⁻³² (~110 pairs a band among
        # 977,000 texts, nearly all then dropped by the agreement), and a value's top 16 bits add a chance
        # agreement with probability 2⁻¹⁶ (a pair's 96 values then agree on ~0.0015 more on average)
        self.keys = np.zeros((BANDS, n), dtype=np.uint32)
        # the values' top 16 bits as two byte planes: the top bytes (row-major, held as WIDTH/8 64-bit words a
        # row, as the agreement's first filter reads them: `_equal_bytes`) and the low bytes. Held as one
        # n × WIDTH uint16 array, the search made the top bytes' words anew each time (`_as_words`): 96 bytes
        # a text more while it ran (~94 MB for scale 1,000's cases, at every rewriting round)
        self._top = np.zeros((n, WIDTH // 8), dtype=np.uint64)
        self._low = np.zeros((n, WIDTH), dtype=np.uint8)
        # two passes over the texts, a batch at a time: the first signs each batch (a row's signature depends
        # on its shingles alone) and gathers the distinct hashes; the second hashes the batches again and numbers
        # them (`_put_batches`). Holding the first pass's batches for the second instead held 8 bytes per shingle
        # of every text (~115 MB for scale 300's 293,100 cases; hashing again costs ~1.3 s there)
        distinct = np.zeros(0, dtype=np.uint64)
        pending: list[np.ndarray] = []
        waiting = shingles = 0
        for rows, hashes, lengths in _hash_batches(texts):
            self._sign(rows, hashes, lengths)
            pending.append(_unique(hashes))
            waiting += len(pending[-1])
            shingles += len(hashes)
            del hashes
            if waiting >= MERGE_PENDING:
                distinct, waiting = _merge(distinct, pending), 0
        self._vocab = _merge(distinct, pending)
        self._added = np.zeros(0, dtype=np.uint64)  # code len(_vocab) + k: the k-th hash first met on replace
        self._added_sorted = np.zeros(0, dtype=np.uint64)
        self._added_codes = np.zeros(0, dtype=np.int64)
        self._codes = np.zeros(0, dtype=np.int32)
        self._start = np.zeros(n, dtype=np.int64)
        self._size = np.zeros(n, dtype=np.int64)
        self._garbage = 0
        self._fit_codes()
        self._put_batches(_hash_batches(texts), capacity=shingles)

    @property
    def sig16(self) -> np.ndarray:
        """The signature values' top 16 bits (rows × WIDTH, uint16), made from the two byte planes held."""
        return (self._top.view(np.uint8).astype(np.uint16) << np.uint16(8)) | self._low

    @property
    def _distinct_count(self) -> int:
        """How many codes there are (the distinct hashes met so far)."""
        return len(self._vocab) + len(self._added)

    def _fit_codes(self) -> None:
        """Widen `_codes` to int64 once there are more codes than int32 holds."""
        if self._distinct_count > np.iinfo(self._codes.dtype).max:
            self._codes = self._codes.astype(np.int64)

    def _lookup(self, hashes: np.ndarray) -> np.ndarray:
        """The codes of `hashes`, numbering the ones never met (after all the others, in sorted order). Each
        distinct hash of the batch is searched for once (a batch's texts share most of their shingles)."""
        import pandas as pd  # its hash table numbers the batch's hashes without sorting them

        repeat, hashes = pd.factorize(hashes)
        codes = np.full(len(hashes), -1, dtype=np.int64)
        for table, numbers in ((self._vocab, None), (self._added_sorted, self._added_codes)):
            if not len(table):
                continue
            at = np.searchsorted(table, hashes)
            np.minimum(at, len(table) - 1, out=at)
            found = (codes < 0) & (table[at] == hashes)
            codes[found] = at[found] if numbers is None else numbers[at[found]]
        new = codes < 0
        if new.any():
            fresh = _unique(hashes[new])
            numbers = self._distinct_count + np.arange(len(fresh), dtype=np.int64)
            codes[new] = numbers[np.searchsorted(fresh, hashes[new])]
            self._added = np.concatenate((self._added, fresh))
            merged = np.concatenate((self._added_sorted, fresh))
            order = np.argsort(merged, kind="stable")
            self._added_sorted = merged[order]
            self._added_codes = np.concatenate((self._added_codes, numbers))[order]
            self._fit_codes()
        return codes[repeat]

    def _put_batches(
        self, batches: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]], capacity: int | None = None
    ) -> None:
        """Set each batch's rows' shingles as sorted distinct codes, appended to `_codes`: batches of (rows, their
        shingles' hashes in row order, each row's count of them), numbered in turn (memory bounded by a batch).

        `capacity` (the batches' shingles in all, an upper bound of their distinct codes): the codes are written
        into one array of that size, shrunk to fit at the end, rather than gathered and joined (the join held
        the codes twice: ~57 MB more for scale 300's cases)."""
        end = len(self._codes)
        parts: list[np.ndarray] = []  # without `capacity`: the new segments, appended to `_codes` at the end
        into = np.empty(end + capacity, dtype=self._codes.dtype) if capacity is not None else None
        if into is not None:
            into[:end] = self._codes
        for batch, hashes, lengths in batches:
            codes = self._lookup(hashes)
            if into is not None and into.dtype != self._codes.dtype:  # `_lookup` widened the codes
                into = into.astype(self._codes.dtype)
            width = max(self._distinct_count, 1)
            keyed = np.repeat(np.arange(len(batch), dtype=np.int64) * width, lengths)
            keyed += codes
            keyed.sort()
            keyed = keyed[np.concatenate(([True], keyed[1:] != keyed[:-1]))] if len(keyed) else keyed
            local = keyed // width
            sizes = np.bincount(local, minlength=len(batch))
            self._garbage += int(self._size[batch].sum())
            self._start[batch] = end + np.cumsum(sizes) - sizes
            self._size[batch] = sizes
            numbered = keyed - local * width
            if into is not None:
                into[end : end + len(numbered)] = numbered
            else:
                parts.append(numbered.astype(self._codes.dtype))
            end += len(numbered)
        if into is not None:
            into.resize(end, refcheck=False)  # shrunk in place: the rows' repeated shingles were counted
            self._codes = into
        elif parts:
            # (to `_codes` as it is now: `_lookup` may have widened it)
            self._codes = _appended(self._codes, parts)
        if self._garbage > len(self._codes) // 2:
            self._compact()

    def _compact(self) -> None:
        """Drop the replaced rows' old segments from `_codes`, in place: the live segments, in the order they
        lie, each moved down to just after the one before it (never up, so none is overwritten before it is
        moved), COMPACT_CHUNK codes at a time; the array is then shrunk. Copying the live codes into a new array
        held them twice, beside an index of 8 bytes per code."""
        codes, sizes = _owned(self._codes), self._size
        rows = np.argsort(self._start, kind="stable")
        lengths = sizes[rows]
        ends = np.cumsum(lengths)
        to = ends - lengths
        src = self._start[rows]
        lo = 0
        while lo < len(rows):
            hi = max(lo + 1, int(np.searchsorted(ends, to[lo] + COMPACT_CHUNK, side="right")))
            part = lengths[lo:hi]
            index = np.repeat(src[lo:hi] - (np.cumsum(part) - part), part) + np.arange(int(part.sum()))
            codes[to[lo] : to[lo] + len(index)] = codes[index]  # read whole before written
            lo = hi
        codes.resize(int(ends[-1]) if len(ends) else 0, refcheck=False)
        self._codes = codes
        self._start[rows] = to
        self._garbage = 0

    def _sign(self, rows: np.ndarray, hashes: np.ndarray, lengths: np.ndarray) -> None:
        """The band keys' and the signature values' top bits (32 and 16) of `rows`, whose shingle hashes are
        `hashes` in row order, `lengths` per row."""
        sig = signatures(hashes, lengths)
        self._top.view(np.uint8)[rows] = (sig >> np.uint64(56)).astype(np.uint8)
        self._low[rows] = (sig >> np.uint64(48)).astype(np.uint8)
        self.keys[:, rows] = (band_keys(sig) >> np.uint64(32)).astype(np.uint32)

    def _row_codes(self, row: int) -> np.ndarray:
        start = int(self._start[row])
        return self._codes[start : start + int(self._size[row])]

    def shingle_set(self, row: int) -> frozenset[int]:
        """The row's distinct shingle hashes."""
        codes = self._row_codes(row).astype(np.int64)
        base = len(self._vocab)
        old = codes < base
        hashes = np.concatenate((self._vocab[codes[old]], self._added[codes[~old] - base]))
        return frozenset(hashes.tolist())

    def similarity(self, a: int, b: int) -> float:
        """The Jaccard similarity of rows a and b's shingle sets (`jaccard` of `shingle_set`s, on their codes)."""
        sa, sb = self._row_codes(a), self._row_codes(b)
        if not len(sa) and not len(sb):
            return 1.0
        both = len(np.intersect1d(sa, sb, assume_unique=True))
        return both / (len(sa) + len(sb) - both)

    def _jaccards(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The exact Jaccard similarity of each pair (lo[k], hi[k]) of shingle sets (`similarity`, as float64),
        for all pairs at once in numpy, EXACT_CHUNK pairs at a time.

        A chunk's pairs' sets become the sorted keys k·D + code (D codes in all, k the pair's place in the
        chunk); the keys of both sides sorted together put every shared shingle's two keys side by side.
        Equal to `similarity` pair by pair (the tests restate it with Python sets of the hashes)."""
        distinct = max(self._distinct_count, 1)
        out = np.empty(len(lo), dtype=np.float64)
        for c0 in range(0, len(lo), EXACT_CHUNK):
            a, b = lo[c0 : c0 + EXACT_CHUNK], hi[c0 : c0 + EXACT_CHUNK]
            pair = np.arange(len(a), dtype=np.int64)
            la, lb = self._size[a], self._size[b]
            keys = np.concatenate(
                (
                    _segments(self._codes, self._start, a, la, pair, distinct),
                    _segments(self._codes, self._start, b, lb, pair, distinct),
                )
            )
            keys.sort(kind="stable")
            shared = keys[1:][keys[1:] == keys[:-1]] // distinct
            both = np.bincount(shared, minlength=len(a))
            union = la + lb - both
            out[c0 : c0 + EXACT_CHUNK] = np.where(union > 0, both / np.maximum(union, 1), 1.0)
        return out

    def replace(self, row: int, text: str | None) -> None:
        self.replace_many([row], [text])

    def replace_many(self, rows: Sequence[int], texts: Sequence[str | None]) -> None:
        """`replace` for each (row, text), hashed and signed together (a row's signature depends on its own
        shingles alone, so this is the same as replacing them one by one); rows must be distinct."""
        if len(set(rows)) != len(rows):
            raise ValueError("replace_many: a row is given twice")
        where = np.asarray(rows, dtype=np.int64)

        def signed() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
            for k, hashes, lengths in _hash_batches(texts):
                self._sign(where[k], hashes, lengths)
                yield where[k], hashes, lengths

        self._put_batches(signed())

    def pairs(self, focus: Iterable[int] | None = None) -> list[tuple[int, int, float]]:
        """Near-duplicate pairs (i < j, similarity), optionally only those involving a row in `focus`."""
        lo, hi, sims = self.pair_arrays(focus)
        return [
            (a, b, round(sim, 4)) for a, b, sim in zip(lo.tolist(), hi.tolist(), sims.tolist(), strict=True)
        ]

    def pair_arrays(self, focus: Iterable[int] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`pairs` as three arrays (i, j, similarity not rounded), in the same order: for a caller that needs
        no Python tuple per pair (scale 1,000's first search of Case.Description finds 1.93 M pairs, ~290 MB
        as tuples)."""
        none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        live = np.flatnonzero(self._size)
        if len(live) < 2:
            return none
        focus_set = None if focus is None else set(focus)
        in_focus = None if focus_set is None else np.isin(live, list(focus_set))
        marks = None
        if focus_set is not None:
            marks = np.zeros(len(self._size), dtype=bool)
            marks[list(focus_set)] = True
        stride = len(self._size) + 1
        # Each candidate pair is settled in the first band where the two rows' keys are equal, and only there
        # (`_first_band`): a pair met again in a later band is dropped without a set of the pairs met so far.
        # Candidates wait, packed as lo * stride + hi, until MERGE_PENDING do or the band ends; then they are
        # made distinct, those whose signatures do not agree are dropped (`_agreeing`), so are those met in an
        # earlier band, and the rest are checked exactly at once: only the pairs found are kept. Memory is
        # bounded by the pairs found plus one batch. (Keeping every agreeing candidate until the exact check
        # held them ~3 times over while merging: they grow with the square of a template's cases, 4.2 M at
        # scale 300's first full search of its cases but ~1.4 GB at scale 1,000's, for 1.9 M pairs found.)
        pending: list[np.ndarray] = []
        every = len(live) == len(self._size)
        top, low = self._top, self._low
        # pairs of the groups of more than 64 members: their agreement is checked group by group (the rows
        # of a group compared with each other in cache), and only the agreeing pairs wait
        agreed: list[np.ndarray] = []
        found: list[np.ndarray] = []  # the pairs found, packed, and their similarities
        sims_found: list[np.ndarray] = []

        def settle(band: int, batch: list[np.ndarray], agree: bool) -> None:
            if not batch:
                return
            distinct = _focus_packed(_merge(_NO_PAIRS, batch), stride, marks)
            if agree:
                lo, hi = _agreeing(distinct, stride, top, low)
            else:
                lo, hi = distinct // stride, distinct % stride
            del distinct
            first = self._first_band(lo, hi, band)
            lo, hi = lo[first], hi[first]
            for c0 in range(0, len(lo), EXACT_SLICE):
                a, b = lo[c0 : c0 + EXACT_SLICE], hi[c0 : c0 + EXACT_SLICE]
                sims = self._jaccards(a, b)
                keep = sims >= self.threshold
                found.append(a[keep] * stride + b[keep])
                sims_found.append(sims[keep])

        table = None if in_focus is None else np.zeros(1 << FILTER_BITS, dtype=bool)
        for band in range(BANDS):
            # the band's key per live row (a copy only when rows are empty; never written to)
            keyv = self.keys[band] if every else self.keys[band][live]
            if in_focus is not None and table is not None:
                inside = _among(keyv, keyv[in_focus], table)
                band_live, keyv = live[inside], keyv[inside]
            else:
                band_live = live
            if len(keyv) < 2:
                continue
            order = np.argsort(keyv, kind="stable")
            sorted_keys = keyv[order]
            cuts = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
            starts = np.concatenate(([0], cuts))
            sizes = np.diff(np.concatenate((starts, [len(order)])))
            big = sizes > 64
            # pairs within the groups of 2..64 members, as (member, member d places later); the groups of one
            # member (most of them) are dropped first, and d stops at the largest group left
            small = (sizes >= 2) & ~big
            if small.any():
                s_starts, s_sizes = starts[small], sizes[small]
                members = np.repeat(np.arange(len(s_starts)), s_sizes)
                s_order = order[
                    np.repeat(s_starts - np.cumsum(s_sizes) + s_sizes, s_sizes) + np.arange(len(members))
                ]
                s_rows = band_live[s_order]
                # in a focused search, only the pairs with a marked row are wanted: the others are dropped here
                # rather than sorted into the distinct candidates first
                s_marked = None if marks is None else marks[s_rows]
                for d in range(1, int(s_sizes.max())):
                    same = members[d:] == members[:-d]
                    if s_marked is not None:
                        same &= s_marked[d:] | s_marked[:-d]
                    k = np.flatnonzero(same)
                    pending.append(_pack(s_rows[k], s_rows[k + d], stride))
                    if sum(len(c) for c in pending) >= MERGE_PENDING:
                        settle(band, pending, agree=True)
            for a, size in zip(starts[big].tolist(), sizes[big].tolist(), strict=True):
                agreed.append(_agreeing_within(band_live[order[a : a + size]], top, low, stride, marks))
                # the many-member groups' pairs agree already
                if sum(len(c) for c in agreed) >= MERGE_PENDING:
                    settle(band, agreed, agree=False)
            del order, sorted_keys
            settle(band, pending, agree=True)
            settle(band, agreed, agree=False)
        if not found:
            return none
        packed = np.concatenate(found)
        sims = np.concatenate(sims_found)
        found.clear()
        sims_found.clear()
        # each pair was found once, in its first band: sorted in the order of (lo, hi), as `pairs` gives them
        order = np.argsort(packed)
        packed, sims = packed[order], sims[order]
        return packed // stride, packed % stride, sims

    def _first_band(self, lo: np.ndarray, hi: np.ndarray, band: int) -> np.ndarray:
        """Which pairs (lo[k], hi[k]) were candidates in no band before `band`: their rows' keys differ in every
        earlier band (two live rows with equal keys in a band are a candidate pair there, in a focused search
        too, where a marked row's key keeps every row with that key in its band)."""
        first = np.ones(len(lo), dtype=bool)
        for earlier in range(band):
            at = np.flatnonzero(first)
            if not len(at):
                break
            keys = self.keys[earlier]
            first[at[keys[lo[at]] == keys[hi[at]]]] = False
        return first


def signatures(hashes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The 96-value OPH signatures (rows × WIDTH, uint64) of texts whose shingle hashes are `hashes` in text
    order, `lengths` per text; a text without shingles gets zeros."""
    owner = np.repeat(np.arange(len(lengths)), lengths)
    sig = np.full((len(lengths), WIDTH), _EMPTY, dtype=np.uint64)
    for k in range(SKETCHES):
        with np.errstate(over="ignore"):
            h = hashes * _MIX[k] + _ADD[k]
        h ^= h >> np.uint64(29)
        with np.errstate(over="ignore"):
            h *= _MIX[(k + 1) % SKETCHES]
        h ^= h >> np.uint64(32)
        bins = (h >> np.uint64(59)).astype(np.int64)  # top 5 bits: the bin
        vals = h & np.uint64((1 << 59) - 1)
        flat = sig[:, k * BINS : (k + 1) * BINS].copy().ravel()
        np.minimum.at(flat, owner * BINS + bins, vals)
        sig[:, k * BINS : (k + 1) * BINS] = _densify(flat.reshape(len(lengths), BINS))
    sig[np.asarray(lengths) == 0] = 0
    return sig


def band_keys(sig: np.ndarray) -> np.ndarray:
    """Per band (BANDS × rows, uint64), one key mixing the band's ROWS values of each signature: two signatures
    with the same values in a band have the same key (a collision only adds a candidate, which the agreement
    and the exact Jaccard then decide)."""
    keys = np.zeros((BANDS, len(sig)), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for band in range(BANDS):
            key = np.zeros(len(sig), dtype=np.uint64)
            for r in range(ROWS):
                key = (key ^ sig[:, BAND_COLUMNS[band][r]]) * _MIX[r % len(_MIX)]
            keys[band] = key
    return keys


_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_HIGH = np.uint64(0x8080808080808080)


# the focused search's first filter: a table of 4 M flags (4 MB), indexed by a key's low bits
FILTER_BITS = 22


def _among(keys: np.ndarray, wanted: np.ndarray, table: np.ndarray) -> np.ndarray:
    """np.isin(keys, wanted) for a few `wanted` among many `keys`, without sorting all the keys: the keys whose
    low FILTER_BITS bits are a wanted key's (a table lookup each) are the only ones searched for exactly.
    `table` is all False on entry and on return."""
    low = np.uint64((1 << FILTER_BITS) - 1)
    slots = (wanted & low).astype(np.intp)
    table[slots] = True
    maybe = np.flatnonzero(table[(keys & low).astype(np.intp)])
    table[slots] = False
    inside = np.zeros(len(keys), dtype=bool)
    inside[maybe[np.isin(keys[maybe], wanted)]] = True
    return inside


def _equal_bytes(xor: np.ndarray) -> np.ndarray:
    """For words x = a ^ b (last axis: a row's WIDTH/8 words), how many of the row's WIDTH bytes are equal in
    a and b, i.e. are zero in x: a byte's high bit in ((x & 0x7F..) + 0x7F..) | x is set exactly when the
    byte is not zero (the sum never carries out of a byte), so the zero bytes are 8 per word minus those bits."""
    nonzero = (((xor & _LOW7) + _LOW7) | xor) & _HIGH
    return WIDTH - np.bitwise_count(nonzero).sum(axis=-1, dtype=np.int64)


def _focus_packed(packed: np.ndarray, stride: int, marks: np.ndarray | None) -> np.ndarray:
    """The packed pairs with a marked row when `marks` is given (all of them otherwise)."""
    if marks is None:
        return packed
    keep = marks[packed // stride] | marks[packed % stride]
    return packed[keep]


def _same16(top8: np.ndarray, low: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pair (a[k], b[k]), which of the WIDTH values' top 16 bits are equal: both their bytes are."""
    same: np.ndarray = top8[a] == top8[b]
    same &= low[a] == low[b]
    return same


def _agreeing(
    packed: np.ndarray, stride: int, top: np.ndarray, low: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The packed pairs whose signatures' values (their top 16 bits) agree on at least MIN_AGREEMENT of the values (the
    MinHash estimate of Jaccard), as (lo, hi); unpacked a chunk at a time to bound memory. `top` holds the
    values' top bytes as WIDTH/8 64-bit words a row, `low` their low bytes: a pair whose top bytes agree on
    fewer is dropped first, comparing 12 words instead of 96 values."""
    need = MIN_AGREEMENT * WIDTH  # agreement >= MIN_AGREEMENT, as a count of agreeing values
    keep = np.zeros(len(packed), dtype=bool)
    step = AGREEMENT_CHUNK
    top8 = top.view(np.uint8)
    for start in range(0, len(packed), step):
        chunk = packed[start : start + step]
        a, b = chunk // stride, chunk % stride
        maybe = np.flatnonzero(_equal_bytes(top[a] ^ top[b]) >= need)
        agree = _same16(top8, low, a[maybe], b[maybe]).mean(axis=1)
        keep[start + maybe[agree >= MIN_AGREEMENT]] = True
    kept = packed[keep]
    return kept // stride, kept % stride


def _agreeing_within(
    members: np.ndarray, top: np.ndarray, low: np.ndarray, stride: int, marks: np.ndarray | None
) -> np.ndarray:
    """Every pair of `members` (packed) whose signatures agree as `_agreeing` requires (`top` and `low` as
    there, the top bytes read here byte by byte), compared block by block of rows (each block's comparisons
    stay within ~4 MB): each row against the rows after it, or, with `marks`, each marked row against all the
    others (the pairs without a marked row are not wanted)."""
    m = len(members)
    b8, l8 = top[members].view(np.uint8), low[members]
    need = MIN_AGREEMENT * WIDTH
    step = max(1, (1 << 22) // (m * WIDTH))
    rows = np.arange(m) if marks is None else np.flatnonzero(marks[members])
    out = []
    for r0 in range(0, len(rows), step):
        block = rows[r0 : r0 + step]
        # without marks, block b is compared with the rows from its first one on (the pairs j > i are kept)
        first = int(block[0]) if marks is None else 0
        counts = (b8[block, None, :] == b8[None, first:, :]).sum(axis=2, dtype=np.uint8)
        bi, j = np.nonzero(counts >= need)
        i, j = block[bi], j + first
        later = j > i if marks is None else j != i
        i, j = i[later], j[later]
        if len(i):
            ok = _same16(b8, l8, i, j).mean(axis=1) >= MIN_AGREEMENT
            out.append(_pack(members[i[ok]], members[j[ok]], stride))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def near_duplicates(
    texts: Sequence[str | None], threshold: float = DEFAULT_THRESHOLD
) -> list[tuple[int, int, float]]:
    """Pairs (i, j, similarity) with i < j whose shingle Jaccard similarity is >= threshold, sorted."""
    return NearDuplicateIndex(texts, threshold).pairs()
