"""Staged validation (validators/staged.py: one object after another) reports exactly what the whole-org
checks (`CHECKS` on every object read at once) report: same findings, counts and skipped checks, on the clean
small bundle, on a parted copy of it, and on every corruption of the corpus."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.profile import load_profile
from tests.conftest import FIXTURES, SMALL_PROFILE
from tests.validators.corpus import corrupt
from validators import staged as staged_module
from validators.findings import Report
from validators.load import load_bundle
from validators.run import start_validation, validate_bundle
from validators.staged import StagedRun

CORPUS = sorted((FIXTURES / "corruptions").glob("*.json"))


def _summary(report: Report) -> dict[str, Any]:
    return {
        "findings": [f.to_json() for f in report.findings],
        "objects": report.objects,
        "records": report.records,
        "skipped": report.skipped,
        "exit": report.exit_code,
    }


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Staged validation runs the per-record checks (JSON Schema, text) a chunk of rows at a time; chunks of 7
    rows put chunk boundaries inside every object of the small bundle, and around the corrupted rows."""
    monkeypatch.setattr(staged_module, "ROW_CHUNK", 7)


def test_clean_bundle_same_as_whole_org(small_bundle: Path) -> None:
    staged = _summary(validate_bundle(small_bundle))
    assert staged == _summary(validate_bundle(small_bundle, staged=False))
    assert staged["records"] > 0 and len(staged["objects"]) == 16


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corruption_same_as_whole_org(path: Path, small_bundle: Path, tmp_path: Path) -> None:
    spec = json.loads(path.read_text(encoding="utf-8"))
    corrupt(spec, small_bundle, tmp_path / "bundle")
    whole = _summary(validate_bundle(tmp_path / "bundle", staged=False))
    staged = _summary(validate_bundle(tmp_path / "bundle"))
    assert staged == whole
    # the corruption is visible to both (a check that found nothing on either side would prove little)
    assert whole["findings"] or whole["skipped"]


def test_control_characters_in_many_rows_same_as_whole_org(small_bundle: Path, tmp_path: Path) -> None:
    # `_controls` reports the first 20 rows of a column; staged, with 7-row chunks, the cut spans chunks
    n = 30
    spec = {
        "select": {f"c{k}": {"object": "Case", "nth": k} for k in range(n)},
        "edits": [
            {
                "op": "set",
                "sel": f"c{k}",
                "field": "Subject",
                "value": {"from": f"c{k}.Subject", "replace": [" ", " \u0000 "]},
            }
            for k in range(n)
        ],
    }
    corrupt(spec, small_bundle, tmp_path / "bundle")
    whole = _summary(validate_bundle(tmp_path / "bundle", staged=False))
    staged = _summary(validate_bundle(tmp_path / "bundle"))
    assert staged == whole
    hits = [f for f in whole["findings"] if f["rule"] == "text.control-character" and f["field"] == "Subject"]
    assert len(hits) == 20  # 30 rows hold one, the first 20 are reported


# the order a build writes the objects in (generator/pipeline.py), which the early steps follow
WRITE_ORDER = (
    *("Account", "Issue__c", "Knowledge__kav", "Pricebook2", "Order", "Product2", "PricebookEntry"),
    *("OrderItem", "ProductCategory", "ProductCategoryProduct", "User", "Contact", "Case", "CaseHistory__c"),
    *("EmailMessage", "LiveChatTranscript"),
)


def _begun_as_written(root: Path) -> tuple[StagedRun, list[tuple[str, ...]]]:
    """Validation begun as a build's sidecar begins it: after each object is written, every step that can
    run. Returns the run and the objects each early step read."""
    # the build's profile; a bundle whose manifest names none is begun with the small profile, which
    # `validate_bundle` then finds is not the bundle's: it validates from the start
    profile = load_bundle(root, objects=False).profile or load_profile(str(SMALL_PROFILE))
    run = start_validation(root, profile)
    written: set[str] = set()
    ran = []
    for name in WRITE_ORDER:
        written.add(name)
        before = run.done
        while run.advance(written):
            for step in run.steps[before : run.done]:  # an object's block steps run together
                assert not step.latent  # the latent tables are read once the manifest is
                assert set(step.needs) <= written
                ran.append(step.needs)
            before = run.done
    return run, ran


@pytest.mark.parametrize("path", CORPUS[::4], ids=[p.stem for p in CORPUS[::4]])
def test_validation_begun_as_objects_are_written_same_as_whole_org(
    path: Path, small_bundle: Path, tmp_path: Path
) -> None:
    spec = json.loads(path.read_text(encoding="utf-8"))
    corrupt(spec, small_bundle, tmp_path / "bundle")
    run, ran = _begun_as_written(tmp_path / "bundle")
    assert ("Case",) in ran and ("OrderItem",) in ran  # most of the steps ran early
    early = _summary(validate_bundle(tmp_path / "bundle", early=run))
    assert early == _summary(validate_bundle(tmp_path / "bundle", staged=False))
    assert early["findings"] or early["skipped"]


def test_validation_begun_on_the_clean_bundle_same_as_whole_org(small_bundle: Path) -> None:
    run, ran = _begun_as_written(small_bundle)
    assert len(ran) < len(run.steps)  # the steps reading the chats and the latent tables wait
    assert _summary(validate_bundle(small_bundle, early=run)) == _summary(
        validate_bundle(small_bundle, staged=False)
    )


def test_the_orders_are_let_go_before_the_chats_and_emails_are_read(small_bundle: Path) -> None:
    # the large text objects are read with as little else held as the checks allow: no step after the first
    # one reading the chats or the emails reads the orders, so they are not held beside them
    run = start_validation(small_bundle, load_profile(str(SMALL_PROFILE)))
    held: dict[str, set[str]] = {}
    while run.done < len(run.steps):
        step = run.steps[run.done]
        before = set(run.frames)
        run._run(run.done)
        for name in ("LiveChatTranscript", "EmailMessage"):
            if name in step.needs and name not in held:
                held[name] = before | set(step.needs)
    assert set(held) == {"LiveChatTranscript", "EmailMessage"}
    for name, frames in held.items():
        assert not frames & {"Order", "OrderItem"}, (name, sorted(frames))
    # the findings are still those of the whole-org checks (the case/order and chat/case checks apart)
    assert run.finish().findings == []


def test_an_object_unreadable_past_its_first_blocks_is_reported_as_the_whole_org_reports_it(
    small_bundle: Path, tmp_path: Path
) -> None:
    # the per-record checks read EmailMessage 7 rows at a time: a bad cell in its first block, a cut row in
    # its ninth. Read whole, the object is unreadable and nothing is said of its cells; the first blocks'
    # findings must not be said either
    bad = {"op": "set", "sel": "bad", "field": "Incoming", "value": "maybe"}
    spec: dict[str, Any] = {
        "select": {"bad": {"object": "EmailMessage", "nth": 2}, "cut": {"object": "EmailMessage", "nth": 60}},
        "edits": [bad, {"op": "truncate_row", "sel": "cut"}],
    }
    corrupt(spec, small_bundle, tmp_path / "bundle")
    whole = _summary(validate_bundle(tmp_path / "bundle", staged=False))
    assert _summary(validate_bundle(tmp_path / "bundle")) == whole
    about_emails = [f for f in whole["findings"] if f["object"] == "EmailMessage"]
    assert [f["rule"] for f in about_emails] == ["bundle.csv"]
    assert "EmailMessage" not in whole["objects"]
    # the bad cell alone is found, by both
    spec["edits"] = [bad]
    corrupt(spec, small_bundle, tmp_path / "only-bad")
    whole = _summary(validate_bundle(tmp_path / "only-bad", staged=False))
    assert _summary(validate_bundle(tmp_path / "only-bad")) == whole
    assert any(f["object"] == "EmailMessage" and f["field"] == "Incoming" for f in whole["findings"])


@pytest.mark.parametrize("name", ["EmailMessage", "CaseHistory__c"])
def test_the_emails_and_the_history_are_read_once_a_block_at_a_time_and_never_held(
    name: str, small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # EmailMessage and CaseHistory__c (STREAMED) have all their checks (with the offers the emails' agents
    # make, and the history's rules, `rules.HistoryRows`) worked out as the file is read, 7 rows at a time:
    # nothing of them is held between steps, each file is read once (the emails' near-duplicate search reads
    # only their texts, `iter_columns`), and no block read is longer than 7 rows
    from orgs.bundle import Bundle

    sizes: list[int] = []
    real = Bundle.iter_raw

    def counted(self: Bundle, sobject: str, *args: Any, **kwargs: Any) -> Any:
        for block in real(self, sobject, *args, **kwargs):
            if sobject == name:
                sizes.append(len(block))
            yield block

    monkeypatch.setattr(Bundle, "iter_raw", counted)
    run = start_validation(small_bundle, load_profile(str(SMALL_PROFILE)))
    held = False
    while run.done < len(run.steps):
        run._run(run.done)
        held |= name in run.frames
    outcome = run.finish()
    assert not held
    assert sum(sizes) == outcome.objects[name] > 7 and max(sizes) == 7
    assert outcome.findings == []


def test_a_latent_table_is_held_only_from_the_first_step_reading_it_to_the_last(small_bundle: Path) -> None:
    # the latent tables (latent/<Object>.csv) are not read with the manifest and held through every step: each
    # is read when the first step naming it runs and let go after the last, so none is held beside the orders
    run = start_validation(small_bundle, load_profile(str(SMALL_PROFILE)))
    data = run.data
    had: list[tuple[int, set[str], set[str]]] = []  # step, the tables held while it ran, those it names
    for i, step in enumerate(run.steps):
        if step.run is not None:
            real = step.run

            def seen(fr: Any, real: Any = real, i: int = i, names: tuple[str, ...] = step.latent) -> Any:
                had.append((i, set(data.latent), set(names)))
                return real(fr)

            step.run = seen
    while run.done < len(run.steps):
        run._run(run.done)
    outcome = run.finish()
    naming = {
        name: [i for i, step in enumerate(run.steps) if name in step.latent] for name in data.latent_read
    }
    assert set(naming) == {"Case", "EmailMessage", "Issue__c", "Knowledge__kav"}  # each read, by some step
    for i, held, names in had:
        assert names <= held, (i, names, held)  # a step has the tables it reads
        within = {name for name, at in naming.items() if at and at[0] <= i <= at[-1]}
        assert held <= within, (i, sorted(held - within))  # and none read before or kept after its use
    orders = [i for i, step in enumerate(run.steps) if "OrderItem" in step.needs and step.family == "rules"]
    assert orders and all(not held for i, held, _ in had if i in orders)
    assert data.latent == {}
    assert outcome.findings == []


def test_an_unreadable_latent_table_is_reported_as_the_whole_org_reports_it(
    small_bundle: Path, tmp_path: Path
) -> None:
    # latent/EmailMessage.csv cut short inside a quoted cell: read only when the offers step runs, it is
    # reported with its file and line, and its checks listed as skipped, as when it is read with the manifest
    root = tmp_path / "bundle"
    shutil.copytree(small_bundle, root)
    path = root / "latent" / "EmailMessage.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:5]) + 'x,"unclosed\n', encoding="utf-8")
    whole = _summary(validate_bundle(root, staged=False))
    assert _summary(validate_bundle(root)) == whole
    about = [f for f in whole["findings"] if f["rule"] == "bundle.csv"]
    assert [(f["file"], f["line"]) for f in about] == [("latent/EmailMessage.csv", 6)]
    assert any("latent/EmailMessage.csv" in s for s in whole["skipped"])


def test_the_near_duplicate_search_holds_nothing_else_of_its_object_and_each_file_is_read_once_in_blocks(
    small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Case's and the chats' searches read only the texts they compare, from the file, before anything of the
    # object is held (at scale 1,000 Case's held frame was ~700 MB beside the search's index); the object's
    # per-record checks (and the chats' offers) then read its file once, a block at a time, as before
    from orgs.bundle import Bundle

    block_reads: dict[str, int] = {}
    real = Bundle.iter_raw

    def counted(self: Bundle, sobject: str, *args: Any, **kwargs: Any) -> Any:
        block_reads[sobject] = block_reads.get(sobject, 0) + 1
        return real(self, sobject, *args, **kwargs)

    monkeypatch.setattr(Bundle, "iter_raw", counted)
    run = start_validation(small_bundle, load_profile(str(SMALL_PROFILE)))
    searched: dict[str, set[str]] = {}
    while run.done < len(run.steps):
        step = run.steps[run.done]
        if step.run is not None and step.run.__name__ == "near_duplicates":
            searched[step.needs[0]] = set(run.frames)
        run._run(run.done)
    assert set(searched) == {"Case", "LiveChatTranscript", "Knowledge__kav", "Product2"}
    assert all(name not in held for name, held in searched.items()), searched
    # OrderItem, never held whole, is read twice: the rows the cases name, then for its own steps; Case twice
    # too: its per-record checks, then the check of its texts' products (its held frame keeps no text)
    assert block_reads.pop("OrderItem") == 2 and block_reads.pop("Case") == 2
    assert block_reads and all(n == 1 for n in block_reads.values()), block_reads
    assert {"LiveChatTranscript", "EmailMessage"} <= set(block_reads)
    assert run.finish().findings == []


def _csv_column(path: Path, field: str) -> list[str]:
    """A field of a bundle's CSV (one file or its parts, in part order) as Python's csv module reads it: the
    oracle `FileTexts` is held to (orgseed writes an empty cell for a missing value)."""
    import csv

    files = sorted(path.glob("part-*.csv")) if path.is_dir() else [path]
    out: list[str] = []
    for file in files:
        with open(file, newline="", encoding="utf-8") as fh:
            rows = csv.reader(fh)
            at = next(rows).index(field)
            out.extend(row[at] for row in rows)
    return out


def test_file_texts_read_in_order_twice_equal_the_csv_modules_reading(small_bundle: Path) -> None:
    # FileTexts serves the search's index a field a block of ROW_CHUNK (7) rows at a time: read from first to
    # last row, twice, as the index reads it, and then by slices and backwards, it gives the file's cells
    from orgs.bundle import Bundle

    bundle = Bundle(small_bundle)
    expected = [c or None for c in _csv_column(small_bundle / "data" / "Case.csv", "Description")]
    assert len(expected) > 3 * staged_module.ROW_CHUNK
    texts = staged_module.FileTexts(bundle, "Case", "Description")
    assert len(texts) == len(expected)
    for _ in range(2):
        assert [texts[i] for i in range(len(texts))] == expected
        assert len(texts._block) <= staged_module.ROW_CHUNK  # one block held, never the field
    assert texts[3:11] == expected[3:11]
    assert [texts[i] for i in reversed(range(len(texts)))] == expected[::-1]
    with pytest.raises(IndexError):
        texts[len(expected)]


def test_a_file_that_changes_between_the_readings_of_its_texts_is_noticed(
    small_bundle: Path, tmp_path: Path
) -> None:
    # The index reads the texts twice after they were counted: a file that lost rows in between is noticed
    # (`_Changed`) rather than read as it now is, and the search then reports nothing; the object's own
    # reading reports what the file holds
    from orgs.bundle import Bundle

    copy = tmp_path / "bundle"
    shutil.copytree(small_bundle, copy)
    texts = staged_module.FileTexts(Bundle(copy), "Case", "Description")
    n = len(texts)
    assert texts[n - 1] is not None
    import csv

    path = copy / "data" / "Case.csv"
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows[:-5])
    assert texts[0] == (rows[1][rows[0].index("Description")] or None)  # a new reading starts
    with pytest.raises(staged_module._Changed):
        texts[n - 1]  # which ends 5 rows short
    # and a file that gained rows: read to its counted end, the reading goes on, which `check_ended` says
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows([*rows, *rows[1:6]])
    grown = staged_module.FileTexts(Bundle(copy), "Case", "Description")
    assert [grown[i] for i in range(len(grown))] == [
        r[rows[0].index("Description")] or None for r in (*rows[1:], *rows[1:6])
    ]
    grown.check_ended()  # a whole reading: nothing past the count
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows([*rows, *rows[1:6], *rows[1:6]])
    assert grown[0] == (rows[1][rows[0].index("Description")] or None)  # a new reading starts
    for i in range(len(grown)):
        grown[i]
    with pytest.raises(staged_module._Changed):
        grown.check_ended()


def test_the_near_duplicate_search_reads_its_texts_from_the_file_a_block_at_a_time(
    small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the search's index is given is the file's field read a block at a time (FileTexts), not the texts
    # gathered: each of the four searched fields, and it never held more than a block
    from validators import text as text_module

    given: list[tuple[str, str, int]] = []
    real = text_module.near_duplicate_pairs

    def watched(texts: Any) -> Any:
        found = real(texts)
        assert isinstance(texts, staged_module.FileTexts)
        given.append((texts.name, texts.field, len(texts._block)))
        return found

    monkeypatch.setattr(text_module, "near_duplicate_pairs", watched)
    report = validate_bundle(small_bundle, load_profile(str(SMALL_PROFILE)))
    assert report.findings == []
    assert {(n, f) for n, f, _ in given} == {
        ("Case", "Description"),
        ("LiveChatTranscript", "Body"),
        ("Knowledge__kav", "FAQ_Answer__c"),
        ("Product2", "Description"),
    }
    assert all(held <= staged_module.ROW_CHUNK for _, _, held in given)


# OrderItem, the largest object (7.1 M rows at scale 1,000), is never held whole: its checks are fed its blocks
# from one reading, its ids' repeats found by hash, and Case keeps only the items the cases name
ITEM_CORRUPTIONS: dict[str, tuple[dict[str, Any], tuple[str, str]]] = {
    "duplicate-item-id": (
        {
            "select": {"first": {"object": "OrderItem", "nth": 3}, "dup": {"object": "OrderItem", "nth": 40}},
            "edits": [{"op": "set", "sel": "dup", "field": "Id", "value": {"from": "first.Id"}}],
        },
        ("integrity.duplicate-id", "OrderItem"),
    ),
    "item-named-by-two-cases": (
        {
            "select": {"a": {"object": "Case", "nth": 2}, "b": {"object": "Case", "nth": 5}},
            "edits": [
                {"op": "set", "sel": "b", "field": "OrderItemId__c", "value": {"from": "a.OrderItemId__c"}}
            ],
        },
        ("integrity.cardinality", "OrderItem"),
    ),
    "item-id-of-another-object": (
        {
            "select": {"item": {"object": "OrderItem", "nth": 10}},
            "edits": [{"op": "set", "sel": "item", "field": "Id", "value": "801Ws0000ZZZZZZAAA"}],
        },
        ("integrity.key-prefix", "OrderItem"),
    ),
    "items-without-and-with-a-lost-order": (
        {
            "select": {"a": {"object": "OrderItem", "nth": 12}, "b": {"object": "OrderItem", "nth": 13}},
            "edits": [
                {"op": "set", "sel": "a", "field": "OrderId", "value": ""},
                {"op": "set", "sel": "b", "field": "OrderId", "value": "801Ws0000zzzzzzAAA"},
            ],
        },
        ("integrity.dangling-lookup", "OrderItem"),
    ),
}


@pytest.mark.parametrize("name", sorted(ITEM_CORRUPTIONS))
def test_order_item_corruptions_same_as_whole_org(name: str, small_bundle: Path, tmp_path: Path) -> None:
    spec, (rule, sobject) = ITEM_CORRUPTIONS[name]
    corrupt(spec, small_bundle, tmp_path / "bundle")
    whole = _summary(validate_bundle(tmp_path / "bundle", staged=False))
    assert _summary(validate_bundle(tmp_path / "bundle")) == whole
    assert any(f["rule"] == rule and f["object"] == sobject for f in whole["findings"]), whole["findings"]


def test_streamed_ids_whose_hashes_collide_are_told_apart_by_their_values(
    small_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every id hashed alike: every record of each streamed object (the order items, the emails, the history)
    # is a candidate, read again, and only the true repeat is reported
    spec, _ = ITEM_CORRUPTIONS["duplicate-item-id"]
    corrupt(spec, small_bundle, tmp_path / "bundle")
    whole = _summary(validate_bundle(tmp_path / "bundle", staged=False))
    import numpy as np
    import pandas as pd

    reread: list[tuple[str, int]] = []
    real = staged_module._rows_at

    def counted(state: Any, spec: Any, at: Any, columns: Any) -> Any:
        reread.append((spec.name, int(at.sum())))
        return real(state, spec, at, columns)

    monkeypatch.setattr(pd.util, "hash_array", lambda values, *a, **k: np.zeros(len(values), dtype=np.uint64))
    monkeypatch.setattr(staged_module, "_rows_at", counted)
    assert _summary(validate_bundle(tmp_path / "bundle")) == whole
    data = tmp_path / "bundle" / "data"
    counts = {name: len(_csv_column(data / f"{name}.csv", "Id")) for name in staged_module.STREAMED}
    assert sorted(reread) == sorted(counts.items())
    assert [f["rule"] for f in whole["findings"] if f["object"] == "OrderItem"].count(
        "integrity.duplicate-id"
    ) == 1


def test_order_items_are_never_held_whole_and_the_cases_keep_only_theirs(small_bundle: Path) -> None:
    import csv

    run = start_validation(small_bundle, load_profile(str(SMALL_PROFILE)))
    named: list[Any] = []
    case_held: set[str] = set()
    while run.done < len(run.steps):
        run._run(run.done)
        assert "OrderItem" not in run.frames
        if "Case" in run.frames:
            case_held |= set(run.frames["Case"].columns)
        got = run.state.named.get(("Case", "OrderItem"))
        if got is not None and not named:
            named.append(got.copy())
    # nor are the cases' texts: the product check reads them from the file
    assert "OrderItemId__c" in case_held and not case_held & {"Subject", "Description"}, sorted(case_held)
    assert run.finish().findings == []
    assert run.state.named == {} and run.state.indexes == {}
    # the rows kept: those of the items the cases name, in file order, read independently with the csv module
    asked = set(_csv_column(small_bundle / "data" / "Case.csv", "OrderItemId__c")) - {""}
    with open(small_bundle / "data" / "OrderItem.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    expected = [
        (r["Id"], r["OrderId"], r["Product2Id"], n + 2) for n, r in enumerate(rows) if r["Id"] in asked
    ]
    assert named and 0 < len(expected) < len(rows)
    kept = named[0]
    assert list(zip(kept["Id"], kept["OrderId"], kept["Product2Id"], kept["_line"], strict=True)) == expected


def test_a_bound_needing_every_order_item_reads_them_a_block_at_a_time(small_bundle: Path) -> None:
    # a bound whose minimum is above 0 is broken by the items no case names: every item is read for it
    import csv
    from dataclasses import replace

    profile = load_profile(str(SMALL_PROFILE))
    bounds = {**profile.bounds, "Case": {**profile.bounds.get("Case", {}), "OrderItemId__c": (1, 1)}}
    strict = replace(profile, bounds=bounds)
    run = start_validation(small_bundle, strict)
    assert any(s.streams == ("OrderItem",) and s.needs == ("Case", "OrderItem") for s in run.steps)
    whole = _summary(validate_bundle(small_bundle, strict, staged=False))
    assert _summary(validate_bundle(small_bundle, strict)) == whole
    asked = set(_csv_column(small_bundle / "data" / "Case.csv", "OrderItemId__c"))
    with open(small_bundle / "data" / "OrderItem.csv", newline="", encoding="utf-8") as fh:
        unnamed = [n + 2 for n, r in enumerate(csv.DictReader(fh)) if r["Id"] not in asked]
    found = [
        f["line"]
        for f in whole["findings"]
        if f["rule"] == "integrity.cardinality" and f["object"] == "OrderItem"
    ]
    assert unnamed and found == unnamed


@given(
    st.lists(st.tuples(st.integers(0, 6), st.booleans()), max_size=40),
)
@settings(max_examples=200, deadline=None)
def test_repeated_marks_the_values_that_occur_twice_among_those_present(
    cells: list[tuple[int, bool]],
) -> None:
    import numpy as np
    import pandas as pd

    h = np.array([v for v, _ in cells], dtype=np.uint64)
    present = np.array([p for _, p in cells], dtype=bool)
    got = staged_module._repeated(h, present)
    at = np.flatnonzero(present)
    expected = np.zeros(len(h), dtype=bool)
    expected[at] = pd.Series(h[at]).duplicated(keep=False).to_numpy()
    assert got.tolist() == expected.tolist()


def test_rows_read_again_from_a_file_that_changed_are_one_error_naming_it(small_bundle: Path) -> None:
    # the repeats' second reading expects the rows the first one counted: a file that now holds fewer is said
    import numpy as np

    from orgs.bundle import BundleError

    run = start_validation(small_bundle, load_profile(str(SMALL_PROFILE)))
    spec = run.data.model.get("OrderItem")
    n = len(_csv_column(small_bundle / "data" / "OrderItem.csv", "Id"))
    at = np.zeros(n, dtype=bool)
    at[[0, n - 1]] = True
    got = staged_module._rows_at(run.state, spec, at, ("Id",))
    assert got["_line"].tolist() == [2, n + 1]  # the first and last records, at their lines
    with pytest.raises(BundleError, match=r"data/OrderItem\.csv changed while it was validated"):
        staged_module._rows_at(run.state, spec, np.ones(n + 3, dtype=bool), ("Id",))


def test_the_offers_step_holds_neither_the_chats_nor_the_emails_and_lets_their_messages_go(
    small_bundle: Path,
) -> None:
    # the chats' and emails' messages (case, line, id, offers) are worked out as each object is read: the step
    # checking the offers against the latent labels holds neither object's frame, and once it has run nothing
    # of their messages is left for the history's steps after it
    run = start_validation(small_bundle, load_profile(str(SMALL_PROFILE)))
    checked = 0
    while run.done < len(run.steps):
        step = run.steps[run.done]
        offers = step.family == "text" and "EmailMessage" in step.latent
        if offers:
            assert set(run.state.offers) == {"LiveChatTranscript", "EmailMessage"}
            assert (
                len(run.state.offers["EmailMessage"]) > 0 and len(run.state.offers["LiveChatTranscript"]) > 0
            )
            assert not set(run.frames) & {"LiveChatTranscript", "EmailMessage"}, sorted(run.frames)
        run._run(run.done)
        if offers:
            checked += 1
            assert run.state.offers == {} and run.state.case_issues is None
    assert checked == 1
    assert run.finish().findings == []
