"""The build's near-duplicate rewriting loop (generator.pipeline._regenerate_near_duplicates) with fake
writers: one that needs many rounds to vary its texts, and one that never can."""

from __future__ import annotations

import asyncio
from itertools import combinations
from typing import Any

import pandas as pd
import pytest

from generator import pipeline
from generator.objects import BuildError
from generator.text.base import TextKind, TextRequest
from schemas.textsim import DEFAULT_THRESHOLD, jaccard, shingles

SAME = "the customer says the parcel arrived crushed and the shoes inside are scuffed and wants a refund"


def unique(row: int, attempt: int) -> str:
    return f"case {row} attempt {attempt} words w{row}x{attempt} y{row}z{attempt} v{row}u{attempt}"


class SlowWriter:
    """Row r only varies its text from attempt 1 + r % 9 on: rewriting needs nine rounds."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    async def write(self, kind: str, reqs: list[TextRequest]) -> list[dict[str, Any]]:
        self.calls.append(len(reqs))
        out = []
        for req in reqs:
            row, attempt = int(req.key), int(req.facts.get("attempt", 0))
            out.append({"text": unique(row, attempt) if attempt >= 1 + row % 9 else SAME})
        return out


class StuckWriter(SlowWriter):
    async def write(self, kind: str, reqs: list[TextRequest]) -> list[dict[str, Any]]:
        self.calls.append(len(reqs))
        return [{"text": SAME} for _ in reqs]


class FakeGen:
    sobject = "Case"
    dedup_fields = ("Description",)
    text_kind = TextKind.CASE

    def held_texts(self, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return results

    def apply_text(
        self, ctx: Any, frame: pd.DataFrame, reqs: list[TextRequest], texts: list[dict[str, Any]]
    ) -> pd.DataFrame:
        out = frame.copy()
        out["Description"] = [t["text"] for t in texts]
        return out


def run(writer: SlowWriter, monkeypatch: pytest.MonkeyPatch, rows: int = 30) -> tuple[pd.DataFrame, int]:
    reqs = [TextRequest(TextKind.CASE, str(r), {}) for r in range(rows)]
    texts = [{"text": SAME} for _ in range(rows)]
    frame = pd.DataFrame({"Description": [SAME] * rows})
    return asyncio.run(pipeline._regenerate_near_duplicates(None, writer, FakeGen(), frame, reqs, texts))  # type: ignore[arg-type]


def test_rewriting_goes_on_while_it_makes_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    writer = SlowWriter()
    frame, redone = run(writer, monkeypatch)
    texts = frame["Description"].tolist()
    # brute force over every pair: no near-duplicates are left
    assert all(jaccard(shingles(a), shingles(b)) < DEFAULT_THRESHOLD for a, b in combinations(texts, 2))
    # row 0 keeps its text (the earlier of each pair stays); the other 29 needed up to nine rewrites
    assert texts[0] == SAME and redone == 29
    assert len(writer.calls) == 9 > 4


def test_rewriting_that_makes_no_progress_fails_soon(monkeypatch: pytest.MonkeyPatch) -> None:
    writer = StuckWriter()
    with pytest.raises(BuildError, match=r"Case: 29 text\(s\) are still near-duplicates after 3 rounds"):
        run(writer, monkeypatch)
    assert writer.calls == [29, 29, 29]


class RecordingWriter(SlowWriter):
    """SlowWriter that records every request it is asked for (key and facts)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[list[tuple[str, dict[str, Any]]]] = []

    async def write(self, kind: str, reqs: list[TextRequest]) -> list[dict[str, Any]]:
        self.asked.append([(r.key, dict(r.facts)) for r in reqs])
        return await super().write(kind, reqs)


class OnDemandGen(FakeGen):
    """FakeGen whose requests are made from its frame, a row's alone (`requests_per_row`)."""

    requests_per_row = True

    def text_requests(self, ctx: Any, frame: pd.DataFrame) -> list[TextRequest]:
        return [TextRequest(TextKind.CASE, str(r), {"row": int(r)}) for r in frame["row"]]


def test_requests_made_on_demand_are_rewritten_as_kept_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    # Requests made on demand are not kept once rewritten (a scale-300 org's rewritten cases held ~75 MB): a
    # row's next rewrite is its request made again with the attempt counter set. The writer is asked exactly
    # what it is asked when every request is a kept list, round by round, and the texts are the same.
    rows = 30
    gen = OnDemandGen()
    frame = pd.DataFrame({"Description": [SAME] * rows, "row": range(rows)})
    kept = gen.text_requests(None, frame)
    outs, asked = [], []
    for reqs in (kept, pipeline.RequestsOnDemand(gen, None, frame)):  # type: ignore[arg-type]
        writer = RecordingWriter()
        texts = [{"text": SAME} for _ in range(rows)]
        outs.append(
            asyncio.run(pipeline._regenerate_near_duplicates(None, writer, gen, frame, reqs, texts))  # type: ignore[arg-type]
        )
        asked.append(writer.asked)
        if isinstance(reqs, pipeline.RequestsOnDemand):
            assert reqs.changed == {}
    assert asked[0] == asked[1] and len(asked[0]) == 9
    assert all(facts["attempt"] >= 1 and facts["row"] == int(key) for call in asked[1] for key, facts in call)
    pd.testing.assert_frame_equal(outs[0][0], outs[1][0])
    assert outs[0][1] == outs[1][1] == 29


@pytest.mark.parametrize("chunk", [1, 4, 7])
def test_a_round_rewritten_a_chunk_at_a_time_asks_and_gives_what_one_call_does(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    # A round rewrites TEXT_CHUNK rows at a time (scale 1,000's first round held ~1 GB of requests at once):
    # the writer is asked the same requests in the same order, in calls of at most `chunk`, and the texts
    # and the rewrite count are those of rounds written in one call each.
    rows = 30
    gen = OnDemandGen()
    frame = pd.DataFrame({"Description": [SAME] * rows, "row": range(rows)})
    runs = []
    for size in (rows, chunk):
        monkeypatch.setattr(pipeline, "TEXT_CHUNK", size)
        writer = RecordingWriter()
        texts = [{"text": SAME} for _ in range(rows)]
        reqs = pipeline.RequestsOnDemand(gen, None, frame)  # type: ignore[arg-type]
        out = asyncio.run(pipeline._regenerate_near_duplicates(None, writer, gen, frame, reqs, texts))  # type: ignore[arg-type]
        runs.append((out, writer.asked))
    (whole, asked_whole), (chunked, asked_chunked) = runs
    assert all(len(call) <= chunk for call in asked_chunked)
    assert len(asked_chunked) > len(asked_whole) == 9
    assert [r for call in asked_chunked for r in call] == [r for call in asked_whole for r in call]
    pd.testing.assert_frame_equal(whole[0], chunked[0])
    assert whole[1] == chunked[1] == 29
