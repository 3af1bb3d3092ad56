"""Texts spilled by text shards and read back by number (generator/spill.py): every string comes back as it
was given, whatever the shards, the order asked in and the blocks of rows filled; a shard file changed under
the build, or a result that is not text, is refused by name."""

from __future__ import annotations

import itertools
import string
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.objects import BuildError
from generator.spill import ShardSpiller, SpilledTexts, TextFill

FIELDS = ("Subject", "TextBody")
text = st.one_of(st.none(), st.text(max_size=40), st.text(alphabet=string.printable, max_size=40))
message = st.tuples(text, text)
result = st.lists(message, min_size=0, max_size=4).map(tuple)


def spill(folder: Path, shards: list[list[tuple]]) -> SpilledTexts:
    out = []
    for k, results in enumerate(shards):
        spiller = ShardSpiller(folder, f"T.texts-{k}", FIELDS)
        # added in two chunks, as a shard adds each chunk of results the writer returns
        half = len(results) // 2
        keys = [f"request {k}.{i}" for i in range(len(results))]
        spiller.add(results[:half], keys[:half])
        spiller.add(results[half:], keys[half:])
        out.append(spiller.close())
    return SpilledTexts(folder, out, FIELDS)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shards=st.lists(st.lists(result, max_size=5), min_size=1, max_size=4), data=st.data())
def test_every_string_comes_back_as_given_in_any_order(tmp_path_factory, shards, data) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("spill")
    texts = spill(folder, shards)
    # the strings in order, derived from the inputs directly: message i's field f is string i * 2 + f
    flat = [s for results in shards for messages in results for m in messages for s in m]
    assert texts.results == sum(len(r) for r in shards)
    assert texts.sizes.tolist() == [len(m) for results in shards for m in results]
    order = data.draw(st.permutations(range(len(flat))))
    asked = np.array(order, dtype=np.int64)
    assert texts.strings(asked) == [flat[i] for i in order]
    assert not list(folder.glob("*.tmp"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shards=st.lists(st.lists(result, max_size=6), min_size=1, max_size=3), data=st.data())
def test_a_fill_gives_each_row_its_messages_strings_block_by_block(tmp_path_factory, shards, data) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("fill")
    texts = spill(folder, shards)
    messages = [m for results in shards for ms in results for m in ms]
    # rows in any order of the messages (a frame sorted otherwise than its threads)
    rows = data.draw(st.permutations(range(len(messages))))
    frame = pd.DataFrame({"Id": [f"row{r}" for r in range(len(rows))]})
    fill = TextFill(texts, np.array(rows, dtype=np.int64))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=3)))
    bounds = [0, *cuts, len(rows)]
    blocks = [fill(frame.iloc[a:b], a) for a, b in itertools.pairwise(bounds)]
    got = pd.concat(blocks)
    assert got["Id"].tolist() == frame["Id"].tolist()
    assert got["Subject"].tolist() == [messages[m][0] for m in rows]
    assert got["TextBody"].tolist() == [messages[m][1] for m in rows]
    assert fill(frame.iloc[:0], 0).columns.tolist() == ["Id", *FIELDS]


def test_a_result_that_is_not_text_is_refused_naming_the_field(tmp_path: Path) -> None:
    spiller = ShardSpiller(tmp_path, "T.texts-0", FIELDS)
    with pytest.raises(
        BuildError,
        match=r"returned a value of type int for a message's TextBody, not text: request 5003, message 1\.",
    ):
        spiller.add([(("a", "b"),), (("c", "d"), ("subject", 7))], ["5002", "5003"])  # type: ignore[list-item]
    with pytest.raises(
        BuildError,
        match=r"holds 1 texts where 2 were expected \(Subject, TextBody\): request 5004, message 0\.",
    ):
        spiller.add([(("subject",),)], ["5004"])
    spiller.abandon()
    assert list(tmp_path.iterdir()) == []


def test_a_shard_file_changed_during_the_build_is_named(tmp_path: Path) -> None:
    spiller = ShardSpiller(tmp_path, "T.texts-0", FIELDS)
    spiller.add([(("hello", "world"),)], ["5005"])
    shard = spiller.close()
    path = tmp_path / "T.texts-0"
    assert path.read_bytes() == b"helloworld"
    path.write_bytes(b"hello")
    with pytest.raises(BuildError, match=rf"{path} holds 5 bytes where its text shard wrote 10"):
        SpilledTexts(tmp_path, [shard], FIELDS)
    path.unlink()
    with pytest.raises(
        BuildError, match=rf"{path}, written by a text shard, is missing: the work folder was changed"
    ):
        SpilledTexts(tmp_path, [shard], FIELDS)


def test_a_fill_past_its_rows_is_an_error(tmp_path: Path) -> None:
    texts = spill(tmp_path, [[((("a", "b"),))]])
    fill = TextFill(texts, np.array([0], dtype=np.int64))
    frame = pd.DataFrame({"Id": ["x", "y"]})
    with pytest.raises(ValueError, match="past the 1 rows"):
        fill(frame, 0)


def test_a_text_shard_that_fails_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a shard whose writer fails after its first chunk of email threads is retried whole (by its task runner):
    # it leaves neither a spilled file nor a temporary one for the retry or the emails' CSV to trip on
    import asyncio

    from generator import pipeline
    from generator.pipeline import RunContext, RunSpec, make_context
    from generator.text.base import TextKind
    from generator.text.offline import OfflineWriter
    from tests.conftest import SMALL_PROFILE

    monkeypatch.setattr(pipeline, "TEXT_CHUNK", 5)
    run = RunSpec(profile=str(SMALL_PROFILE), seed=0, scale=1.0)
    rc = RunContext(tmp_path, run, make_context(run))
    inner = OfflineWriter(0)
    calls: list[int] = []

    class FailingWriter:
        name = "failing"

        async def write(self, kind: TextKind, reqs: list) -> list:
            if kind == TextKind.EMAIL_THREAD:
                calls.append(len(reqs))
                if len(calls) == 2:
                    raise RuntimeError("the endpoint went away")
            return await inner.write(kind, reqs)

        def forget_memos(self) -> None:
            inner.forget_memos()

        async def aclose(self) -> None:
            return None

    rc._writer = FailingWriter()  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="the endpoint went away"):
        asyncio.run(pipeline.generate(rc, pipeline.LocalExecutor(), 1, lambda name, frame, fill: None))
    assert calls == [5, 5]  # it failed part-way through the shard, after spilling a chunk
    work = tmp_path / pipeline.WORK_DIR
    assert not [p.name for p in work.iterdir() if p.name.startswith("EmailMessage.texts")]


def test_an_object_whose_texts_are_spilled_has_no_near_duplicate_rounds() -> None:
    # the near-duplicate rounds rewrite texts held in memory; a spilled object's texts are only in the work
    # folder, so the two cannot go together (and at least one object spills: the emails)
    from generator.objects import GENERATORS

    spilled = [name for name, gen in GENERATORS.items() if gen.spills_texts]
    assert "EmailMessage" in spilled
    assert all(not GENERATORS[name].dedup_fields and GENERATORS[name].text_kind for name in spilled)
