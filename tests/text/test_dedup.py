"""Near-duplicate detection on word 3-shingles (threshold 0.5)."""

from __future__ import annotations

import random

from generator.text.dedup import NearDuplicates, shingles

WORDS = [f"w{i}" for i in range(500)]


def text(rng: random.Random, n: int = 80) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def edit(rng: random.Random, t: str, share: float) -> str:
    words = t.split()
    for i in rng.sample(range(len(words)), int(len(words) * share)):
        words[i] = "zz" + str(i)
    return " ".join(words)


def test_shingles() -> None:
    assert shingles("The cat sat on the mat") == {"the cat sat", "cat sat on", "sat on the", "on the mat"}
    assert shingles("Hi there") == {"hi there"}
    assert shingles("") == set()


def test_planted_near_copies_are_found_and_distinct_texts_kept() -> None:
    rng = random.Random(7)
    originals = [text(rng) for _ in range(60)]
    copies = [edit(rng, t, 0.05) for t in originals[:20]]
    far = [edit(rng, t, 0.5) for t in originals[20:30]]  # half the words changed: not a duplicate
    found = NearDuplicates(0.5).find([*originals, *copies, *far, None])
    assert found[:60] == [None] * 60
    assert found[60:80] == list(range(20))
    assert found[80:90] == [None] * 10
    assert found[90] is None


def test_a_duplicate_is_not_kept_so_it_cannot_shadow_later_texts() -> None:
    rng = random.Random(3)
    a = text(rng)
    assert NearDuplicates().find([a, a, a]) == [None, 0, 0]
