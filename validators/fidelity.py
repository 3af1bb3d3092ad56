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
from collections.abc import Iterable, Sequence

from schemas.textrules import DOUBLING, doublings

__all__ = [
    "DOUBLING",
    "distinct_n",
    "doublings",
    "mean_distinct_n",
    "ngrams",
    "overlap",
    "repeated_ngrams",
    "sample",
    "top_ngram_share",
    "verbatim",
    "verbatim_share",
    "words",
]

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


def sample(texts: Sequence[str], size: int, seed: int = 0) -> list[str]:
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


def repeated_ngrams(texts: Sequence[str | None], n: int = 8, top: int = 5) -> list[tuple[str, float]]:
    """The `top` word n-grams held by the most texts, each with the share of texts holding it."""
    if not texts:
        return []
    counts: Counter[tuple[str, ...]] = Counter()
    for t in texts:
        counts.update(set(ngrams(t, n)))
    # nsmallest is sorted(...)[:top] without sorting every n-gram (millions at scale 100: 23 s of 50)
    ranked = heapq.nsmallest(top, counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(" ".join(g), c / len(texts)) for g, c in ranked]


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
