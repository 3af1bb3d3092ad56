"""Near-duplicates within one batch of texts, for the LLM writer's optional per-batch rewriting pass.

The definition is the project's one (`schemas.textsim`: word 3-shingle Jaccard ≥ the threshold, 0.5 by
default), so a text this pass keeps is judged the same way by the pipeline's whole-object pass and by the
validators. Calibration (reference/llm-and-prefect.md A6): a 5% word edit keeps 3-shingle Jaccard near 0.74,
and at 0.5 word 3-grams caught every planted near-copy with no false positive, where 1-grams over-match on
stop words.
"""

from __future__ import annotations

from collections.abc import Sequence

from schemas.textsim import DEFAULT_THRESHOLD, NearDuplicateIndex, shingles

__all__ = ["NearDuplicates", "shingles"]


class NearDuplicates:
    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold

    def find(self, texts: Sequence[str | None]) -> list[int | None]:
        """For each text, the index of the earliest kept text it nearly duplicates (None: it is kept).

        None and empty entries are skipped (None). A text that duplicates another is not kept, so it cannot
        make a later text a duplicate. Deterministic: the pairs come from fixed hashes and are taken in order.
        """
        earlier: dict[int, list[int]] = {}  # pairs come sorted, so each list is ascending
        for i, j, _ in NearDuplicateIndex(texts, self.threshold).pairs():
            earlier.setdefault(j, []).append(i)
        out: list[int | None] = []
        for j in range(len(texts)):
            out.append(next((i for i in earlier.get(j, ()) if out[i] is None), None))
        return out
