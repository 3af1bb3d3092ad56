"""Generation holds only the frames later generators read: each object's frame is let go once every object
that reads it is written, and a released frame read by mistake is a clear error, not a silent change."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pandas as pd
import pytest

from generator.objects import BuildContext
from generator.pipeline import LocalExecutor, RunContext, RunSpec, generate, generation_order, make_context
from generator.spill import TextFill
from schemas.model import load_model
from tests.conftest import SMALL_PROFILE


def test_frames_are_released_once_no_later_object_reads_them(tmp_path: Path) -> None:
    model = load_model()
    run = RunSpec(profile=str(SMALL_PROFILE), seed=0, scale=1.0)
    rc = RunContext(tmp_path, run, make_context(run, model))
    held: dict[str, set[str]] = {}

    def persist(name: str, frame: pd.DataFrame, fill: object) -> None:
        held[name] = {n for n in rc.build.frames if ":" not in n}

    asyncio.run(generate(rc, LocalExecutor(), 2, persist))
    order = generation_order(model)
    assert set(held) == set(order)
    # Emails, chats and history are about cases: the orders and their items (read by Case) are gone by then
    # (LiveChatTranscript is the last object in the generation order, EmailMessage comes after CaseHistory__c).
    for late in ("EmailMessage", "LiveChatTranscript"):
        assert "OrderItem" not in held[late] and "Order" not in held[late]
        assert "Case" in held[late]
    # the orders are still there while Case is written: Case reads them
    assert {"Order", "OrderItem"} <= held["Case"]
    # after the last object nothing is held, and every object is recorded as released
    assert [n for n in rc.build.frames if ":" not in n] == []
    assert rc.build.released == set(order)


def test_the_texts_begin_with_no_stored_column_held(tmp_path: Path) -> None:
    # With `spill`, finished objects are held as stored frames, read column by column. What an object's
    # structured stage read of them (Case reads the orders and their items) is let go before its texts are asked for (a
    # long phase: Case's near-duplicate rounds); the texts read again only what they use. Measured as the
    # structured stage ends (`finalize`) and as the text stage begins (`text_request_count`, its first step).
    from generator.frames import StoredFrame
    from generator.objects import GENERATORS

    run = RunSpec(profile=str(SMALL_PROFILE), seed=0, scale=1.0)
    rc = RunContext(tmp_path, run, make_context(run))
    at_end: dict[str, dict[str, list[str]]] = {}
    at_texts: dict[str, dict[str, list[str]]] = {}

    def stored() -> dict[str, list[str]]:
        return {
            n: sorted(f.whole)
            for n, f in rc.build.frames.items()
            if isinstance(f, StoredFrame) and (f.whole or f.held_bytes())
        }

    def watch(name: str, method: str, into: dict[str, dict[str, list[str]]]) -> None:
        gen = GENERATORS[name]
        real = getattr(gen, method)

        def watched(*args: object) -> object:
            into.setdefault(name, stored())
            return real(*args)

        setattr(gen, method, watched)

    texts = [n for n, g in GENERATORS.items() if g.text_kind is not None]
    try:
        for name in texts:
            watch(name, "finalize", at_end)
            watch(name, "text_request_count", at_texts)
        asyncio.run(generate(rc, LocalExecutor(), 2, lambda name, frame, fill: None, spill=True))
    finally:
        for name in texts:
            for method in ("finalize", "text_request_count"):
                vars(GENERATORS[name]).pop(method, None)  # the class's method again
    # the cases' structured stage read the stored order items (else this test shows nothing) ...
    assert at_end["Case"].get("OrderItem") and at_end["Case"].get("Order"), at_end["Case"]
    # ... and no object's texts begin with a stored column held
    assert set(at_texts) == set(texts)
    assert all(held == {} for held in at_texts.values()), at_texts


def test_reading_a_released_frame_names_the_fix() -> None:
    ctx = BuildContext(model=load_model(), profile=None, world=None, seed=0, scale=1.0)  # type: ignore[arg-type]
    ctx.frames["Order"] = pd.DataFrame({"Id": ["801000000000001AAA"]})
    ctx.plans["Order.per_customer"] = [1]
    ctx.release("Order")
    assert "Order" not in ctx.frames and ctx.plans == {}
    with pytest.raises(KeyError, match=r"add 'Order' to the `reads`"):
        ctx.frame("Order")


def test_a_writer_that_drops_an_email_stops_generation_naming_the_case(tmp_path: Path) -> None:
    # EmailMessage's texts are applied without its requests (they are made a slice at a time and let go): a
    # thread short of one email must still stop the build, naming the case and both counts, not shift the
    # other emails. The case and the count expected come from the request the writer was given.
    from generator.objects import BuildError
    from generator.text.base import TextKind
    from generator.text.offline import OfflineWriter

    run = RunSpec(profile=str(SMALL_PROFILE), seed=0, scale=1.0)
    rc = RunContext(tmp_path, run, make_context(run))
    inner = OfflineWriter(0)
    dropped: list[tuple[str, int]] = []

    class DroppingWriter:
        name = "dropping"

        async def write(self, kind: TextKind, reqs: list) -> list:
            out = await inner.write(kind, reqs)
            if kind == TextKind.EMAIL_THREAD and out and not dropped:
                dropped.append((reqs[0].key, len(reqs[0].facts["messages"])))
                out[0] = {**out[0], "messages": list(out[0]["messages"])[:-1]}
            return out

        async def aclose(self) -> None:
            return None

    rc._writer = DroppingWriter()  # type: ignore[assignment]
    with pytest.raises(BuildError) as info:
        asyncio.run(generate(rc, LocalExecutor(), 2, lambda name, frame, fill: None))
    case, expected = dropped[0]
    assert (
        str(info.value) == f"The writer returned {expected - 1} emails for case {case}, expected {expected}."
    )


def test_generation_lets_the_writers_memos_go(tmp_path: Path) -> None:
    # what the writer memoised for generation's texts (a persona per customer) is not held past generation
    from generator.text.offline import OfflineWriter

    run = RunSpec(profile=str(SMALL_PROFILE), seed=0, scale=1.0)
    rc = RunContext(tmp_path, run, make_context(run))
    filled: list[int] = []

    def persist(name: str, frame: pd.DataFrame, fill: object) -> None:
        writer = rc.writer()
        assert isinstance(writer, OfflineWriter)
        filled.append(len(writer._persona_of))

    asyncio.run(generate(rc, LocalExecutor(), 1, persist))
    writer = rc.writer()
    assert isinstance(writer, OfflineWriter)
    assert max(filled) > 0 and writer._persona_of == {}


def test_forgetting_memos_makes_no_writer() -> None:
    run = RunSpec(profile=str(SMALL_PROFILE), seed=0, scale=1.0)
    rc = RunContext(Path("."), run, make_context(run))
    rc.forget_memos()
    assert rc._writer is None


def test_emails_get_the_texts_the_writer_wrote_for_their_thread(tmp_path: Path) -> None:
    # the text shards spill the email threads' texts to the work folder and the frame's writer reads them back
    # a block of rows at a time: every email still gets the subject and body the writer wrote for its place in
    # its case's thread, checked here against the writer's own results (thread key = the case's Id, message k
    # = the email with _seq k), over two blocks
    from generator.text.base import TextKind
    from generator.text.offline import OfflineWriter

    run = RunSpec(profile=str(SMALL_PROFILE), seed=0, scale=1.0)
    rc = RunContext(tmp_path, run, make_context(run))
    inner = OfflineWriter(0)
    wrote: dict[tuple[str, int], tuple[str, str]] = {}

    class RecordingWriter:
        name = "recording"

        async def write(self, kind: TextKind, reqs: list) -> list:
            out = await inner.write(kind, reqs)
            if kind == TextKind.EMAIL_THREAD:
                for req, res in zip(reqs, out, strict=True):
                    for k, msg in enumerate(res["messages"]):
                        wrote[(req.key, k)] = (msg["subject"], msg["body"])
            return out

        def forget_memos(self) -> None:
            inner.forget_memos()

        async def aclose(self) -> None:
            return None

    emails: list[pd.DataFrame] = []

    def persist(name: str, frame: pd.DataFrame, fill: TextFill | None) -> None:
        if name == "EmailMessage":
            # the building process holds no email text: the frame gets it a block at a time as it is written
            assert fill is not None and "TextBody" not in frame.columns and "Subject" not in frame.columns
            cut = len(frame) // 3
            blocks = [fill(frame.iloc[a:b], a) for a, b in ((0, cut), (cut, len(frame)))]
            emails.append(pd.concat(blocks)[["ParentId", "_seq", "Subject", "TextBody"]])

    rc._writer = RecordingWriter()  # type: ignore[assignment]
    asyncio.run(generate(rc, LocalExecutor(), 2, persist))
    frame = emails[0]
    got = {
        (parent, int(seq)): (subject, body)
        for parent, seq, subject, body in frame.itertuples(index=False, name=None)
    }
    assert len(got) == len(frame) > 100 and got == wrote


class _Texts(list):
    """A shard's texts, in a list that can be watched with a weak reference."""


def test_a_text_shards_results_go_with_the_last_reference_its_caller_drops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The building process writes an object's texts into its frame, rewrites near-duplicates and writes the
    CSV without yielding to the event loop: whatever the executor leaves referenced (such as the future
    `asyncio.gather` returns results through, which the loop's wake-up handle keeps until the next yield)
    lives through all of that. Once the caller drops the results, nothing may hold them."""
    import weakref

    from generator import pipeline

    async def shard(job: pipeline.ShardJob, rc: object) -> list[str]:
        await asyncio.sleep(0)  # a writer that waits, as the LLM writer does
        return _Texts([f"text {job.shard}.{i}" for i in range(3)])

    monkeypatch.setattr(pipeline, "run_text_shard", shard)
    run = RunSpec(profile=str(SMALL_PROFILE), seed=0, scale=1.0)
    jobs = [pipeline.ShardJob("root", run, "Case", "text", s, 3) for s in range(3)]

    async def caller() -> list[bool]:
        out = await LocalExecutor().run(None, jobs)  # type: ignore[arg-type]
        assert [list(r) for r in out] == [[f"text {s}.{i}" for i in range(3)] for s in range(3)]
        refs = [weakref.ref(r) for r in out]
        del out
        # no await since: the results must be gone with the caller's reference
        return [ref() is None for ref in refs]

    assert asyncio.run(caller()) == [True, True, True]
