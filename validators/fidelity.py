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
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import numpy as np

from schemas.textrules import DOUBLING, doublings

__all__ = [
    "DOUBLING",
    "distinct_n",
    "doublings",
    "mean_distinct_n",
    "mean_distinct_n_of",
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


def sampled_texts(batches: Batches, count: int, size: int, draws: int = 5) -> list[list[str | None]]:
    """The texts of `sample(texts, size, seed)` for seeds 0 to `draws - 1`, where `texts` is the `count`
    texts `batches()` yields, reading them once in batches: `random.sample` draws its positions from the
    population's length alone, so sampling `range(count)` picks the same positions. With `count <= size`,
    one list of every text (what `mean_distinct_n` measures whole)."""
    if count <= size:
        return [[t for batch in batches() for t in batch]]
    picks = [sample(range(count), size, seed) for seed in range(draws)]
    wanted = {i for p in picks for i in p}
    found: dict[int, str | None] = {}
    at = 0
    for batch in batches():
        for t in batch:
            if at in wanted:
                found[at] = t
            at += 1
    return [[found[i] for i in p] for p in picks]


def mean_distinct_n_of(samples: Sequence[Sequence[str | None]], n: int) -> float:
    """`mean_distinct_n` from the samples `sampled_texts` drew (one list: the texts whole)."""
    return sum(distinct_n(s, n) for s in samples) / len(samples)


def repeated_ngrams(texts: Sequence[str | None], n: int = 8, top: int = 5) -> list[tuple[str, float]]:
    """The `top` word n-grams held by the most texts, each with the share of texts holding it (ties: the
    n-gram's words in order)."""
    return repeated_ngrams_in(lambda: [texts], n, top)


Batches = Callable[[], Iterable[Sequence[str | None]]]  # each call reads the texts anew, in batches

COMPACT_AT = 1 << 18  # n-gram hashes buffered before they are folded into the sorted (hash, count) arrays


def repeated_ngrams_in(batches: Batches, n: int = 8, top: int = 5) -> list[tuple[str, float]]:
    """`repeated_ngrams` of the texts `batches()` yields, in memory bounded by the number of distinct n-grams
    (12 bytes each) rather than by the n-grams themselves (a tuple of word strings each, ~0.5 kB: 180 MB of a
    scale-30 build's peak was that Counter).

    Two passes. The first counts, per hash of an n-gram, the texts holding an n-gram with that hash: an upper
    bound of each n-gram's own count (a collision can only add). The second counts exactly the n-grams
    whose hash reaches the `top`-th largest bound, and ranks them; should a collision have pushed the
    threshold above the exact `top`-th count, the second pass runs again with the threshold lowered to that
    count, so every n-gram that can rank is counted exactly: the result is `repeated_ngrams`'s, exactly."""
    total = 0
    keys = np.empty(0, dtype=np.int64)
    counts = np.empty(0, dtype=np.int32)
    buffer = array("q")
    for batch in batches():
        for t in batch:
            total += 1
            buffer.extend({hash(g) for g in ngrams(t, n)})
            if len(buffer) >= COMPACT_AT:
                keys, counts = _fold(keys, counts, buffer)
                buffer = array("q")
    keys, counts = _fold(keys, counts, buffer)
    del buffer
    if not total or not len(keys) or top <= 0:
        return []
    bounds = np.sort(counts)[::-1]
    threshold = int(bounds[min(top, len(bounds)) - 1])
    while True:
        wanted = set(keys[counts >= threshold].tolist())
        exact: Counter[tuple[str, ...]] = Counter()
        for batch in batches():
            for t in batch:
                exact.update({g for g in ngrams(t, n) if hash(g) in wanted})
        ranked = heapq.nsmallest(top, exact.items(), key=lambda kv: (-kv[1], kv[0]))
        if len(ranked) == top and ranked[-1][1] >= threshold:
            break  # every n-gram left out is held by fewer texts than the last one ranked
        lowered = ranked[-1][1] if len(ranked) == top else 1
        if lowered >= threshold:
            break  # threshold 1: every n-gram was counted
        threshold = lowered
    return [(" ".join(g), c / total) for g, c in ranked]


def _fold(keys: np.ndarray, counts: np.ndarray, more: array[int]) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct hashes of `keys` and `more` with their summed counts (each of `more` counts 1)."""
    if not len(more):
        return keys, counts
    new, ones = np.unique(np.frombuffer(more, dtype=np.int64), return_counts=True)
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
