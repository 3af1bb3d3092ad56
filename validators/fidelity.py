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
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
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
    tokens = _slice_tokens(texts)
    codes, vocabulary = pd.factorize(np.array(tokens, dtype=object))
    codes = codes.astype(np.int64)
    size = max(len(vocabulary), 1)
    sep = np.zeros(len(tokens) + 1, dtype=np.int64)  # separators before each token
    if _SEP in set(vocabulary.tolist()):
        np.cumsum(codes == vocabulary.tolist().index(_SEP), out=sep[1:])
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
        out.append(len(np.unique(packed[whole])) / grams if grams else 0.0)
    return out


def repeated_ngrams(texts: Sequence[str | None], n: int = 8, top: int = 5) -> list[tuple[str, float]]:
    """The `top` word n-grams held by the most texts, each with the share of texts holding it (ties: the
    n-gram's words in order)."""
    return repeated_ngrams_in(lambda: [texts], n, top)


Batches = Callable[[], Iterable[Sequence[str | None]]]  # each call reads the texts anew, in batches

COMPACT_AT = 1 << 18  # n-gram hashes buffered before they are folded into the sorted (hash, count) arrays
SLICE = 1_024  # texts tokenised together (bounds the token arrays held at once)
_SEP = "\x00"  # joins a slice's texts: WORD never matches it, so no word or n-gram spans two texts
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|\x00")  # WORD, or a text boundary
_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd: an n-gram's hash is its words' hashes as digits base _MIX


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


def _slice_grams(tokens: list[str], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hash, text, start) of every word n-gram of a slice's `tokens`, in text order: `start` indexes
    `tokens`, `text` counts the texts before it in the slice."""
    m = len(tokens) - n + 1
    if m <= 0:
        empty = np.empty(0, dtype=np.int64)
        return empty.view(np.uint64), empty, empty
    word = np.fromiter(map(hash, tokens), dtype=np.int64, count=len(tokens))
    sep = np.zeros(len(tokens), dtype=bool)  # the separators: the tokens hashing as one, checked
    maybe = np.flatnonzero(word == hash(_SEP)).tolist()
    sep[[i for i in maybe if tokens[i] == _SEP]] = True
    seps = np.concatenate(([0], np.cumsum(sep, dtype=np.int64)))  # separators before each token
    word = word.view(np.uint64)
    grams = word[:m].copy()
    for k in range(1, n):
        grams *= _MIX
        grams += word[k : k + m]
    starts = np.flatnonzero(seps[n : n + m] == seps[:m])  # no separator among the n words
    return grams[starts], seps[starts], starts


def _per_text(grams: np.ndarray, texts: np.ndarray) -> np.ndarray:
    """Positions (into `grams`) of each hash's first occurrence in each text: one per (text, hash)."""
    order = np.argsort(grams, kind="stable")  # stable: within one hash, in text order
    g, t = grams[order], texts[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (g[1:] != g[:-1]) | (t[1:] != t[:-1])
    return order[first]


class RepeatedNgrams:
    """`repeated_ngrams_in`, fed batch by batch, so that a caller reading the texts anyway (the fidelity report
    counts and samples them too) reads them no more often: `bound(batch)` for every batch, then, while
    `exact_pass()` is true, `exact(batch)` for every batch (the same batches, in the same order); `result()`.

    The first pass also keeps, per text, the top 16 bits of each n-gram hash it holds (2 bytes an n-gram):
    an exact pass splits into words only the texts holding a fingerprint of a wanted hash (every text holding
    a wanted n-gram does), not every text again."""

    def __init__(self, n: int, top: int) -> None:
        self.n, self.top = n, top
        self.total = 0
        self.keys = np.empty(0, dtype=np.uint64)
        self.counts = np.empty(0, dtype=np.int32)
        self._buffer: list[np.ndarray] = []
        self._buffered = 0
        self._threshold: int | None = None
        self._wanted = np.empty(0, dtype=np.uint64)
        self._wanted_prints = np.empty(0, dtype=np.uint16)
        self._exact: Counter[tuple[str, ...]] = Counter()
        self._ranked: list[tuple[tuple[str, ...], int]] | None = None
        # per slice of the first pass, in order: (texts, each held hash's fingerprint, in text order, and how
        # many each text holds)
        self._prints: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._slice_at = 0  # the next slice an exact pass reads

    def bound(self, batch: Sequence[str | None]) -> None:
        """First pass: per hash of an n-gram, the texts holding an n-gram with that hash (an upper bound of
        each n-gram's own count: a collision can only add)."""
        self.total += len(batch)
        for at in range(0, len(batch), SLICE):
            part = batch[at : at + SLICE]
            grams, texts, _ = _slice_grams(_slice_tokens(part), self.n)
            first = np.sort(_per_text(grams, texts))  # one per (text, hash), in text order
            held = grams[first]
            self._prints.append(
                (
                    len(part),
                    (held >> np.uint64(48)).astype(np.uint16),
                    np.bincount(texts[first], minlength=len(part)),
                )
            )
            self._buffer.append(held)
            self._buffered += len(held)
            if self._buffered >= COMPACT_AT:
                self._compact()

    def _compact(self) -> None:
        if self._buffer:
            self.keys, self.counts = _fold(self.keys, self.counts, np.concatenate(self._buffer))
        self._buffer, self._buffered = [], 0

    def exact_pass(self) -> bool:
        """Whether another pass of `exact` is needed (and its start): the first time, after the bounds; again
        should a collision have pushed the threshold above the exact `top`-th count."""
        if self._threshold is None:
            self._compact()
            if not self.total or not len(self.keys) or self.top <= 0:
                self._ranked = []
                return False
            bounds = np.sort(self.counts)[::-1]
            self._threshold = int(bounds[min(self.top, len(bounds)) - 1])
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
        self._wanted = np.unique(self.keys[self.counts >= self._threshold])
        self._wanted_prints = np.unique((self._wanted >> np.uint64(48)).astype(np.uint16))
        self._exact = Counter()
        self._slice_at = 0
        return True

    def exact(self, batch: Sequence[str | None]) -> None:
        """A pass counting exactly the n-grams whose hash reaches the threshold, once per text holding each."""
        n = self.n
        for at in range(0, len(batch), SLICE):
            part = batch[at : at + SLICE]
            size, prints, held = self._prints[self._slice_at]
            self._slice_at += 1
            if size != len(part):
                raise ValueError("RepeatedNgrams.exact: the batches differ from those of the first pass")
            hits = np.isin(prints, self._wanted_prints)
            if not hits.any():
                continue
            owners = np.repeat(np.arange(size), held)
            chosen = np.unique(owners[hits]).tolist()  # the texts holding a wanted fingerprint
            tokens = _slice_tokens([part[i] for i in chosen])
            grams, texts, starts = _slice_grams(tokens, n)
            where = np.searchsorted(self._wanted, grams)
            where[where == len(self._wanted)] = 0
            hit = np.flatnonzero(self._wanted[where] == grams)
            found = {
                (t, tuple(tokens[s : s + n]))
                for t, s in zip(texts[hit].tolist(), starts[hit].tolist(), strict=True)
            }
            self._exact.update(g for _, g in found)

    def _rank(self) -> list[tuple[tuple[str, ...], int]]:
        return heapq.nsmallest(self.top, self._exact.items(), key=lambda kv: (-kv[1], kv[0]))

    def result(self) -> list[tuple[str, float]]:
        assert self._ranked is not None, "exact_pass() has not said the passes are done"
        return [(" ".join(g), c / self.total) for g, c in self._ranked]


def repeated_ngrams_in(batches: Batches, n: int = 8, top: int = 5) -> list[tuple[str, float]]:
    """`repeated_ngrams` of the texts `batches()` yields, in memory bounded by the number of distinct n-grams
    (12 bytes each) rather than by the n-grams themselves (a tuple of word strings each, ~0.5 kB: 180 MB of a
    scale-30 build's peak was that Counter).

    Two passes. The first counts, per hash of an n-gram, the texts holding an n-gram with that hash: an upper
    bound of each n-gram's own count (a collision can only add). The second counts exactly the n-grams
    whose hash reaches the `top`-th largest bound, and ranks them; should a collision have pushed the
    threshold above the exact `top`-th count, the second pass runs again with the threshold lowered to that
    count, so every n-gram that can rank is counted exactly: the result is `repeated_ngrams`'s, exactly.

    Each slice of texts is tokenised in one regex pass and its n-grams hashed with numpy from the words'
    hashes (`RepeatedNgrams`), not built as tuples of words: only the n-grams that can rank are."""
    counter = RepeatedNgrams(n, top)
    for batch in batches():
        counter.bound(batch)
    while counter.exact_pass():
        for batch in batches():
            counter.exact(batch)
    return counter.result()


def _fold(keys: np.ndarray, counts: np.ndarray, more: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct hashes of `keys` and `more` with their summed counts (each of `more` counts 1)."""
    if not len(more):
        return keys, counts
    new, ones = np.unique(more, return_counts=True)
    at = np.searchsorted(keys, new)
    seen = at < len(keys)
    seen[seen] = keys[at[seen]] == new[seen]
    np.add.at(counts, at[seen], ones[seen].astype(np.int32))
    fresh = ~seen
    return np.insert(keys, at[fresh], new[fresh]), np.insert(counts, at[fresh], ones[fresh].astype(np.int32))


def top_ngram_share(texts: Sequence[str | None], n: int = 8) -> float:
    """The share of texts holding the most widely shared word n-gram (0.0 when none repeats)."""
    top = repeated_ngrams(texts, n, 1)
    return top[0][1] if top else 0.0


def overlap(question: str, article: str, n: int = 4) -> float:
    """The share of the question's word n-grams that occur in the article (0.0 for a question shorter than n)."""
    grams = ngrams(question, n)
    if not grams:
        return 0.0
    have = set(ngrams(article, n))
    return sum(g in have for g in grams) / len(grams)


# A question whose 4-grams mostly occur in its article was copied from it, not paraphrased.
VERBATIM_OVERLAP = 0.5


def verbatim(question: str, article: str) -> bool:
    return overlap(question, article) > VERBATIM_OVERLAP


def verbatim_share(pairs: Sequence[tuple[str, str]]) -> float:
    """The share of (question, article) pairs whose question is mostly verbatim in its article."""
    if not pairs:
        return 0.0
    return sum(verbatim(q, a) for q, a in pairs) / len(pairs)
