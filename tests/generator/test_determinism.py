"""Same inputs → byte-identical data, whatever the shard count; another seed → different data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from schemas.model import load_model
from tests.conftest import REPO, SMALL_PROFILE, build_local


def _manifest(root: Path) -> dict:
    return json.loads((root / "manifest.json").read_text())


def _data_files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "data").glob("*.csv"))}


def test_shard_count_does_not_change_a_byte(tmp_path: Path, small_bundle: Path) -> None:
    four = build_local(tmp_path / "four", shards=4)
    assert _data_files(four) == _data_files(small_bundle)
    assert _manifest(four)["data_sha256"] == _manifest(small_bundle)["data_sha256"]
    assert _manifest(four)["files"] == _manifest(small_bundle)["files"]


def test_another_seed_changes_the_data(tmp_path: Path, small_bundle: Path) -> None:
    other = build_local(tmp_path / "seed1", seed=1)
    assert _manifest(other)["data_sha256"] != _manifest(small_bundle)["data_sha256"]
    differing = [n for n, b in _data_files(other).items() if b != _data_files(small_bundle)[n]]
    assert "Case.csv" in differing and "Account.csv" in differing


def test_hash_randomisation_does_not_leak_into_the_data(tmp_path: Path, small_bundle: Path) -> None:
    out = tmp_path / "hashseed"
    code = (
        "import sys; from tests.conftest import build_local; from pathlib import Path;"
        f"build_local(Path({str(out)!r}), profile={str(SMALL_PROFILE)!r})"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, cwd=REPO, env={"PYTHONHASHSEED": "4242", "PATH": ""}
    )
    assert _data_files(out) == _data_files(small_bundle)


def test_a_build_that_spills_its_finished_objects_writes_the_same_bytes(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Large orgs hold each finished object as stored in the work folder, not whole (flows/build.py
    # SPILL_RECORDS): with the threshold at 0 the small org spills every object, and its data are the same.
    from flows import build
    from generator import pipeline
    from generator.frames import StoredFrame

    held: list[tuple[str, str]] = []
    real = pipeline.generate

    async def watched(*args: Any, **kwargs: Any) -> Any:
        assert kwargs["spill"] is True
        rc = args[0]
        progress = args[4]
        done = progress.on_object_done if progress is not None else None

        def seen(name: str, rows: int, seconds: float) -> None:
            held.extend((n, type(f).__name__) for n, f in rc.build.frames.items() if ":" not in n)
            if done is not None:
                done(name, rows, seconds)

        args = (*args[:4], pipeline.Progress(on_object_done=seen), *args[5:])
        return await real(*args, **kwargs)

    stored: list[str] = []
    real_save = pipeline.save_frame

    def saving(frame: Any, path: Path) -> None:
        stored.append(path.name)
        real_save(frame, path)

    monkeypatch.setattr(build, "SPILL_RECORDS", 0)
    monkeypatch.setattr(build, "generate", watched)
    monkeypatch.setattr(pipeline, "save_frame", saving)
    spilled = build_local(tmp_path / "spilled")
    assert _data_files(spilled) == _data_files(small_bundle)
    assert _manifest(spilled)["data_sha256"] == _manifest(small_bundle)["data_sha256"]
    # the finished objects this process still held were stored ones
    assert held and {kind for _, kind in held} == {StoredFrame.__name__}
    # Stored are the objects a later generator reads, and no other: derived here from the model's generation
    # order and what each generator reads (an object waiting for a rule field would be stored too; the small
    # profile has none such that nothing reads).
    model = load_model()
    order = pipeline.generation_order(model)
    read = {
        n
        for i, name in enumerate(order)
        for n in pipeline.frames_read(model, name, order[:i]) & set(order[:i])
    }
    assert {s for s in stored if not s.endswith(pipeline.ASIDE_SUFFIX)} == read
    # besides, the fields an object's texts do not need, set aside while they are written (pipeline._set_aside):
    # Case's, the one object whose generator names the fields its requests read
    assert [s for s in stored if s.endswith(pipeline.ASIDE_SUFFIX)] == ["Case" + pipeline.ASIDE_SUFFIX]
    assert {"EmailMessage", "LiveChatTranscript"} <= set(order) - read


def test_texts_written_in_a_child_process_are_the_same_bytes(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A large build makes its large near-duplicate-searched objects in a child process (generator/pipeline.py
    # made_apart): with both thresholds at 0 the small org makes every such object so, and its data, text
    # counts and rewrite counts are the same.
    from flows import build
    from generator import pipeline

    apart: list[str] = []
    real = pipeline.in_child

    async def spied(fn: Any, *args: Any, **named: Any) -> Any:
        apart.append(args[2])
        return await real(fn, *args, **named)

    monkeypatch.setattr(build, "SPILL_RECORDS", 0)
    monkeypatch.setattr(pipeline, "APART_ROWS", 0)
    monkeypatch.setattr(pipeline, "in_child", spied)
    out = build_local(tmp_path / "apart")
    assert _data_files(out) == _data_files(small_bundle)
    assert _manifest(out)["data_sha256"] == _manifest(small_bundle)["data_sha256"]
    assert _manifest(out)["text"] == _manifest(small_bundle)["text"]
    # every object with texts kept in its frame and searched for near-duplicates (named by hand), and only
    # those, in generation order
    by_hand = {"Case", "Product2", "Knowledge__kav", "LiveChatTranscript"}
    assert apart == [name for name in pipeline.generation_order(load_model()) if name in by_hand]
    # what went through the work folder was cleared with it
    assert not (out / pipeline.WORK_DIR).exists()


def _large_build_frames(root: Path, scale: float = 1.0) -> tuple[dict[str, Any], Any]:
    """The crmarena org generated in this process as a large build generates (`spill`), two shards: every
    finished frame as it was persisted (a copy), and the generation's result."""
    import asyncio

    from generator import pipeline

    spec = pipeline.RunSpec("crmarena", 0, scale)
    rc = pipeline.RunContext(root, spec, pipeline.make_context(spec))
    frames: dict[str, Any] = {}

    def persist(name: str, frame: Any, fill: Any) -> None:
        frames[name] = frame.copy()

    try:
        result = asyncio.run(pipeline.generate(rc, pipeline.LocalExecutor(), 2, persist, spill=True))
    finally:
        asyncio.run(rc.aclose())
    return frames, result


def test_rewriting_rounds_run_in_the_child_give_the_same_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The crmarena org at scale 1 rewrites near-duplicate cases (the small one does not): generated with its
    # texts written in this process, then in a child, every object's finished frame and the counts agree.

    import pandas as pd

    from generator import pipeline

    def generated(apart_rows: int, folder: str) -> tuple[dict[str, pd.DataFrame], Any]:
        monkeypatch.setattr(pipeline, "APART_ROWS", apart_rows)
        return _large_build_frames(tmp_path / folder)

    here, here_result = generated(10**9, "here")
    child, child_result = generated(0, "child")
    assert here_result.regenerated.get("Case", 0) > 0
    assert child_result.regenerated == here_result.regenerated
    assert child_result.text_counts == here_result.text_counts
    assert list(child) == list(here)
    for name, frame in here.items():
        pd.testing.assert_frame_equal(child[name], frame, check_exact=True, obj=name)


def test_fields_set_aside_while_texts_are_written_give_the_same_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A large build holds only the fields of Case its text requests read (and its text fields) while its texts
    # are written and rewritten (generator/pipeline.py _set_aside), the others waiting in the work folder. The
    # crmarena org at scale 1 rewrites near-duplicate cases: generated with and without setting aside, every
    # finished frame and count agrees, and the rounds saw only the fields named.

    import pandas as pd

    from generator import pipeline
    from generator.objects import GENERATORS

    case = GENERATORS["Case"]
    seen: list[list[str]] = []
    real = pipeline._regenerate_near_duplicates

    async def watched(ctx: Any, writer: Any, gen: Any, frame: Any, *rest: Any) -> Any:
        if gen.sobject == "Case":
            seen.append([str(c) for c in frame.columns])
        return await real(ctx, writer, gen, frame, *rest)

    monkeypatch.setattr(pipeline, "_regenerate_near_duplicates", watched)

    def generated(fields: tuple[str, ...], folder: str) -> tuple[dict[str, pd.DataFrame], Any]:
        monkeypatch.setattr(type(case), "request_fields", fields)
        return _large_build_frames(tmp_path / folder)

    named = case.request_fields
    whole, whole_result = generated((), "whole")
    rounds_whole = list(seen)
    seen.clear()
    aside, aside_result = generated(named, "aside")
    rounds_aside = list(seen)
    assert whole_result.regenerated.get("Case", 0) > 0
    assert aside_result.regenerated == whole_result.regenerated
    assert aside_result.text_counts == whole_result.text_counts
    assert list(aside) == list(whole)
    for name, frame in whole.items():
        pd.testing.assert_frame_equal(aside[name], frame, check_exact=True, obj=name)
    # the rounds saw Case's whole frame, then only the named fields and its two text fields, in frame order
    assert rounds_whole == [list(whole["Case"].columns)]
    assert rounds_aside == [[c for c in whole["Case"].columns if c in {*named, "Subject", "Description"}]]
    assert len(rounds_aside[0]) == len(named) + 2 < len(rounds_whole[0])
    # what was set aside went back and was cleared
    assert not list((tmp_path / "aside").rglob("*" + pipeline.ASIDE_SUFFIX))


def test_a_field_a_request_reads_but_not_named_fails_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A field Case's requests read but its `request_fields` leaves out is not silently made up: the build fails
    # with a KeyError naming it. A field named that the frame lacks fails it with a BuildError saying so.
    import asyncio

    from generator import pipeline
    from generator.objects import GENERATORS, BuildError

    case = GENERATORS["Case"]

    def generate(fields: tuple[str, ...], folder: str) -> None:
        monkeypatch.setattr(type(case), "request_fields", fields)
        spec = pipeline.RunSpec("crmarena", 0, 0.2)
        rc = pipeline.RunContext(tmp_path / folder, spec, pipeline.make_context(spec))
        try:
            asyncio.run(pipeline.generate(rc, pipeline.LocalExecutor(), 1, lambda *a: None, spill=True))
        finally:
            asyncio.run(rc.aclose())

    with pytest.raises(KeyError, match="_tone"):
        generate(tuple(f for f in case.request_fields if f != "_tone"), "short")
    with pytest.raises(BuildError, match=r"request_fields names \['_nowhere'\]"):
        generate((*case.request_fields, "_nowhere"), "extra")
