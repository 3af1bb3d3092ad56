"""Near-duplicate detection: planted paraphrases are found, decisions are exact, runs are reproducible."""

from __future__ import annotations

import random
import subprocess
import sys

from schemas.textsim import jaccard, near_duplicates, shingles
from tests.conftest import REPO


def _corpus(seed: int = 1) -> tuple[list[str], set[tuple[int, int]]]:
    rnd = random.Random(seed)
    words = [f"w{i}" for i in range(3000)]
    base = [" ".join(rnd.choice(words) for _ in range(120)) for _ in range(1500)]
    planted = []
    for k in range(200):  # 5% of the words replaced: Jaccard ≈ 0.7-0.75 on 3-shingles
        w = base[k].split()
        for _ in range(6):
            w[rnd.randrange(120)] = f"zz{rnd.randrange(10**6)}"
        planted.append(" ".join(w))
    return base + planted, {(k, 1500 + k) for k in range(200)}


def test_planted_near_duplicates_are_all_found_and_nothing_else() -> None:
    texts, want = _corpus()
    got = {(a, b) for a, b, _ in near_duplicates(texts)}
    assert got == want


def test_every_reported_pair_meets_the_threshold_exactly() -> None:
    texts = ["the quick brown fox jumps over the lazy dog today", "the quick brown fox jumps over the lazy cat today",
             "a completely different sentence about running shoes and socks", "the quick brown fox"]  # fmt: skip
    pairs = near_duplicates(texts)
    for a, b, sim in pairs:
        assert sim == round(jaccard(shingles(texts[a]), shingles(texts[b])), 4) and sim >= 0.5
    assert (0, 1) in {(a, b) for a, b, _ in pairs}
    assert all(2 not in (a, b) for a, b, _ in pairs)


def test_short_and_empty_texts() -> None:
    assert shingles("") == frozenset() and shingles("two words") == frozenset({"two words"})
    assert near_duplicates(["", None, "same text here", "same text here"]) == [(2, 3, 1.0)]


def test_results_do_not_depend_on_hash_randomisation() -> None:
    code = (
        "from tests.schemas.test_textsim import _corpus; from schemas.textsim import near_duplicates;"
        "t,_ = _corpus(5); print(near_duplicates(t[:1600]))"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            env={"PYTHONHASHSEED": s, "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for s in ("1", "2")
    }
    assert len(outs) == 1
