"""Frames stored for workers (generator/frames.py) read back as the frames they were, and a worker's text
requests made for its shard alone equal the slice of the whole object's requests."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from generator import frames
from generator.frames import FrameStoreError, StoredFrame, save_frame, take
from generator.objects import GENERATORS
from generator.pipeline import (
    WORK_DIR,
    LocalExecutor,
    RequestsOnDemand,
    RunContext,
    RunSpec,
    ShardJob,
    generate,
    make_context,
    shard_requests,
)
from generator.text.base import TextRequest
from tests.conftest import SMALL_PROFILE


@pytest.fixture
def frame() -> pd.DataFrame:
    n = 11
    return pd.DataFrame(
        {
            "Id": [f"id{i:02d}" for i in range(n)],
            "n": np.arange(n, dtype=np.int64) * 3,
            "x": np.linspace(0.0, 1.0, n),
            "flag": np.arange(n) % 3 == 0,
            "when": pd.Series(
                [
                    np.datetime64("2024-01-01T00:00:00") + np.timedelta64(i, "h") if i % 4 else None
                    for i in range(n)
                ],
                dtype="datetime64[s]",
            ),
            "text": [None if i % 5 == 0 else f"t{i}" for i in range(n)],
            "chain": [[i, i + 1][: 1 + i % 2] for i in range(n)],
        }
    )


@pytest.fixture(params=[3, 4, 64])
def stored(request: pytest.FixtureRequest, frame: pd.DataFrame, tmp_path: Path) -> StoredFrame:
    """The frame stored with parts of 3, 4 (11 rows: a short last part) and 64 rows (one part)."""
    mp = pytest.MonkeyPatch()
    mp.setattr(frames, "PART_ROWS", request.param)
    request.addfinalizer(mp.undo)
    save_frame(frame, tmp_path / "f")
    return StoredFrame(tmp_path / "f")


def test_columns_read_back_unchanged(stored: StoredFrame, frame: pd.DataFrame) -> None:
    assert len(stored) == len(frame) and list(stored.columns) == list(frame.columns)
    for column in frame.columns:
        pd.testing.assert_series_equal(stored[column], frame[column], check_index_type=True)
    pd.testing.assert_frame_equal(stored.to_pandas(), frame)


@pytest.mark.parametrize("lo,hi", [(0, 0), (0, 11), (2, 9), (3, 4), (7, 11), (10, 11)])
def test_row_slices_read_only_their_parts(stored: StoredFrame, frame: pd.DataFrame, lo: int, hi: int) -> None:
    view = stored.iloc[lo:hi]
    assert len(view) == hi - lo
    for column in frame.columns:
        pd.testing.assert_series_equal(view[column], frame.iloc[lo:hi][column])
    # nothing read whole: only the parts the slice covers (a 64-row part is the whole frame)
    assert not stored.whole
    covered = {p for r in range(lo, hi) for p in [r // stored.part_rows]}
    assert {p for _, p in stored._parts} <= covered | {0}


def test_masks_and_positions_on_views(stored: StoredFrame, frame: pd.DataFrame) -> None:
    sub, fsub = stored.iloc[2:10], frame.iloc[2:10]
    mask = sub["flag"].to_numpy(dtype=bool)
    for column in frame.columns:
        pd.testing.assert_series_equal(sub[mask][column], fsub[mask][column])
        pd.testing.assert_series_equal(sub.iloc[[5, 0, 3]][column], fsub.iloc[[5, 0, 3]][column])
    positions = np.array([9, 1, 4, 4, 7])
    assert (
        take(stored, "text", positions)
        == take(frame, "text", positions)
        == frame["text"].iloc[positions].tolist()
    )
    stored.column("n")  # once a column is held whole, slices come from it
    pd.testing.assert_series_equal(stored.iloc[3:8]["n"], frame.iloc[3:8]["n"])


def test_strings_taken_from_a_stored_frame_are_made_anew(stored: StoredFrame, frame: pd.DataFrame) -> None:
    """The strings `take_array` keeps are new objects, so none pins the parts it read (which are let go), and
    they equal the frame's values, missing where it has none."""
    positions = np.array([10, 0, 3, 3, 6, 1])
    got = frames.take_array(stored, "text", positions)
    assert got.dtype == object
    pd.testing.assert_series_equal(
        pd.Series(got, name="text"), frame["text"].iloc[positions].reset_index(drop=True)
    )
    read = stored.column_rows("text", positions).tolist()  # the parts' own objects, as held in the cache
    strings = [(a, b) for a, b in zip(read, got.tolist(), strict=True) if isinstance(a, str)]
    assert len(strings) == 4 and all(a == b and a is not b for a, b in strings)
    # other dtypes come back as they are stored
    assert frames.take_array(stored, "n", positions).tolist() == (positions * 3).tolist()


def test_what_cannot_be_stored_or_read_says_so(frame: pd.DataFrame, tmp_path: Path) -> None:
    with pytest.raises(FrameStoreError, match=r"index 0\.\.10"):
        save_frame(frame.iloc[::-1], tmp_path / "reversed")
    with pytest.raises(FrameStoreError, match=r"meta\.pkl"):
        StoredFrame(tmp_path / "missing")
    save_frame(frame, tmp_path / "ok")
    with pytest.raises(KeyError):
        StoredFrame(tmp_path / "ok")["nope"]


class _Recording(LocalExecutor):
    """A LocalExecutor that keeps each text object's whole request list, made in the building process from the
    whole structured frame (`text_requests`)."""

    def __init__(self) -> None:
        self.requests: dict[str, list[TextRequest]] = {}

    async def run(self, rc: RunContext, jobs: Sequence[ShardJob]) -> list[Any]:
        if jobs and jobs[0].stage == "text":
            name = jobs[0].sobject
            self.requests[name] = GENERATORS[name].text_requests(
                rc.build, rc.build.frames[name + ":structured"]
            )
        return await super().run(rc, jobs)


def test_a_workers_text_requests_are_its_slice_of_the_whole(tmp_path: Path) -> None:
    run = RunSpec(profile=str(SMALL_PROFILE), seed=0, scale=1.0)
    recording = _Recording()
    rc = RunContext(tmp_path, run, make_context(run))
    asyncio.run(generate(rc, recording, 1, lambda name, frame, fill: None, shares_memory=False))
    checked, per_row = [], []
    for name, whole in recording.requests.items():
        for shards in (1, 3, 7):
            worker = RunContext(tmp_path, run, make_context(run))  # a fresh worker: only the stored frames
            worker.load_frames(name, "text")
            got = [
                r
                for s in range(shards)
                for r in shard_requests(ShardJob(str(tmp_path), run, name, "text", s, shards), worker)
            ]
            assert got == whole, (name, shards)
        stored = StoredFrame(tmp_path / WORK_DIR / f"{name}.structured")
        if GENERATORS[name].text_request_count(worker.build, stored) is not None:
            checked.append(name)
        if GENERATORS[name].requests_per_row:  # the building process's requests made on demand
            on_demand = RequestsOnDemand(GENERATORS[name], worker.build, stored.to_pandas())
            some = [len(whole) - 1, 0, len(whole) // 2, 0]
            assert len(on_demand) == len(whole) and list(on_demand) == whole
            assert on_demand.at(some) == [whole[i] for i in some] and on_demand[1] == whole[1]
            on_demand[1] = whole[0]
            assert on_demand.at([1, 2]) == [whole[0], whole[2]]
            per_row.append(name)
    assert {"Case", "EmailMessage", "LiveChatTranscript"} <= set(checked)
    assert sorted(per_row) == ["Case", "LiveChatTranscript"]


def test_parts_kept_stay_within_the_byte_cap(
    stored: StoredFrame, frame: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frames, "CACHED_PART_BYTES", 1)  # keeps one part at most: every read re-reads
    for lo, hi in [(0, 5), (4, 11), (1, 9)]:
        for column in frame.columns:
            pd.testing.assert_series_equal(stored.iloc[lo:hi][column], frame.iloc[lo:hi][column])
            assert len(stored._parts) <= 1
    stored.forget()
    assert stored.held_bytes() == 0
