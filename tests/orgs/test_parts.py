"""Large objects in parts (data/<Object>/part-NNNNN.csv): the same records, hash, checks, org and audit as
one file per object, and one clear error naming the file for every broken layout."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.build import build_bundle
from flows.options import BuildOptions
from generator.pipeline import LocalExecutor
from orgs.bundle import MIN_PART_BYTES, Bundle, BundleError, data_digest, logical_data, split_rows, type_frame
from orgs.local import connect, disconnect
from schemas.model import load_model
from tests.conftest import REPO, SMALL_PROFILE, copy_bundle
from validators.audit import run_audit
from validators.run import validate_bundle

MODEL = load_model()
PART = 20_000  # bytes: the small profile's larger objects (Case ~82 KB, EmailMessage ~228 KB) split
SCHEMA = json.loads((REPO / "schemas" / "bundle" / "manifest.schema.json").read_text())


@pytest.fixture(scope="module")
def parted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small profile, seed 0 (as `small_bundle`), written with a 20,000-byte part size (read-only)."""
    out = tmp_path_factory.mktemp("parted") / "bundle"
    opts = BuildOptions(profile=str(SMALL_PROFILE), out=str(out), force=True, engine="local", part_bytes=PART)
    asyncio.run(build_bundle(opts, LocalExecutor()))
    return out


def _manifest(root: Path) -> dict[str, Any]:
    return dict(json.loads((root / "manifest.json").read_text()))


def test_large_objects_are_parts_that_make_up_the_single_file(parted: Path, small_bundle: Path) -> None:
    single, split = _manifest(small_bundle), _manifest(parted)
    parted_objects = sorted(n for n, e in split["objects"].items() if "parts" in e)
    big = sorted(n for n in MODEL.names if (small_bundle / "data" / f"{n}.csv").stat().st_size > PART)
    assert parted_objects == big and "Case" in big and "EmailMessage" in big
    for name in MODEL.names:
        whole = (small_bundle / "data" / f"{name}.csv").read_bytes()
        entry = split["objects"][name]
        if name not in big:
            assert (parted / "data" / f"{name}.csv").read_bytes() == whole
            assert not (parted / "data" / name).exists()
            continue
        assert not (parted / "data" / f"{name}.csv").exists()
        files = sorted((parted / "data" / name).iterdir())
        assert [f.name for f in files] == [f"part-{i:05d}.csv" for i in range(1, len(files) + 1)]
        assert len(files) == len(entry["parts"]) >= 2
        header = whole.split(b"\n", 1)[0] + b"\n"
        body = b""
        rows = 0
        for f, listed in zip(files, entry["parts"], strict=True):
            data = f.read_bytes()
            assert data.startswith(header) and len(data) <= PART  # within the part size
            n = len(list(csv.reader(io.StringIO(data.decode())))) - 1
            assert listed == {
                "file": f"data/{name}/{f.name}",
                "rows": n,
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            assert split["files"][listed["file"]] == listed["sha256"]
            body += data[len(header) :]
            rows += n
        assert header + body == whole  # the parts, the header once: the single file, byte for byte
        assert entry["sha256"] == single["objects"][name]["sha256"] and entry["rows"] == rows
        assert f"data/{name}.csv" not in split["files"]
    # data_sha256 is over the logical records: the layout does not change it
    assert split["data_sha256"] == single["data_sha256"] == data_digest(logical_data(split["objects"]))
    assert data_digest(single["files"]) == single["data_sha256"]
    assert split["data_parts"] == {"max_bytes": PART}
    for m in (single, split):
        jsonschema.validate(m, SCHEMA)
    # the task files (built from the parts) are the single-file build's
    for rel in ("tasks/tasks.json", "tasks/ground_truth.jsonl"):
        assert (parted / rel).read_bytes() == (small_bundle / rel).read_bytes()


def test_the_parts_read_as_the_records_of_one_file(parted: Path, small_bundle: Path) -> None:
    for name in ("Case", "EmailMessage", "User"):
        spec = MODEL.get(name)
        a = Bundle(small_bundle).read_raw(name, spec)
        b = Bundle(parted).read_raw(name, spec)
        assert a.drop(columns="_line").equals(b.drop(columns="_line"))
        assert a["_line"].tolist() == b["_line"].tolist()  # lines counted as if one file


@pytest.mark.parametrize("rows", [1, 7, 100_000])
def test_the_parts_read_a_block_at_a_time_as_the_records_of_one_file(
    parted: Path, small_bundle: Path, rows: int
) -> None:
    for name in ("Case", "EmailMessage", "User"):
        spec = MODEL.get(name)
        whole = Bundle(small_bundle).read_raw(name, spec)
        reader = Bundle(parted)
        blocks = list(reader.iter_raw(name, spec, rows=rows))
        assert all(0 < len(b) <= rows for b in blocks)
        got = pd.concat(blocks, ignore_index=True)
        assert got.drop(columns="_line").equals(whole.drop(columns="_line"))
        assert got["_line"].tolist() == whole["_line"].tolist()
        # each line is then located in its part as after reading the parts whole
        whole_reader = Bundle(parted)
        whole_reader.read_raw(name, spec)
        for line in whole["_line"].tolist()[:: max(1, len(whole) // 50)]:
            assert reader.locate(name, line) == whole_reader.locate(name, line)


def test_a_part_whose_header_differs_from_the_first_is_refused_by_both_readers(
    parted: Path, tmp_path: Path
) -> None:
    # read without the model, only the parts' agreement can catch it
    root = copy_bundle(parted, tmp_path / "b")
    part = root / "data" / "Case" / "part-00002.csv"
    head, rest = part.read_text().split("\n", 1)
    part.write_text(head.replace("Subject", "Topic", 1) + "\n" + rest)
    first = root / "data" / "Case" / "part-00001.csv"
    errors = []
    for read in (lambda b: b.read_raw("Case"), lambda b: list(b.iter_raw("Case", rows=7))):
        with pytest.raises(BundleError) as caught:
            read(Bundle(root))
        errors.append(caught.value)
    for exc in errors:
        assert str(exc).startswith(f"{part}:1: the header differs from the first part's ({first})")
        assert (getattr(exc, "file", None), getattr(exc, "line", None)) == (str(part), 1)


def test_validation_and_the_audit_are_the_single_file_builds(parted: Path, small_bundle: Path) -> None:
    one, split = validate_bundle(small_bundle), validate_bundle(parted)
    assert split.ok and split.records == one.records and split.objects == one.objects
    assert [f.to_json() for f in split.findings] == [f.to_json() for f in one.findings]
    mine, theirs = run_audit(parted), run_audit(small_bundle)
    assert mine["sections"] == theirs["sections"] and mine["verdict"] == theirs["verdict"]


def test_the_served_org_answers_the_same_from_parts(parted: Path, tmp_path: Path, small_bundle: Path) -> None:
    a_root, b_root = copy_bundle(small_bundle, tmp_path / "one"), copy_bundle(parted, tmp_path / "parts")
    try:
        a, b = connect(a_root), connect(b_root)
        for name in MODEL.names:
            q = f"SELECT COUNT() FROM {name}"
            assert a.query(q)["totalSize"] == b.query(q)["totalSize"] == _manifest(parted)["counts"][name]
        q = "SELECT Id, Subject, ParentId, MessageDate FROM EmailMessage ORDER BY Id"
        assert a.query_all(q)["records"] == b.query_all(q)["records"]
        live = run_audit(b_root, org=b)["sections"]["org"]
        assert live["verdict"] == run_audit(a_root, org=a)["sections"]["org"]["verdict"]
    finally:
        disconnect(a_root)
        disconnect(b_root)


def test_a_finding_in_a_part_names_the_part_and_its_line(parted: Path, tmp_path: Path) -> None:
    root = copy_bundle(parted, tmp_path / "b")
    part = root / "data" / "Case" / "part-00002.csv"
    rows = list(csv.reader(io.StringIO(part.read_text(), newline="")))
    col = rows[0].index("Status")
    rows[3][col] = "Not A Status"  # the third record of part 2
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    part.write_text(buf.getvalue())
    # the line of rows[3] in the part, counted independently: the header, the physical lines of rows 1-2, + 1
    text = buf.getvalue()
    reader = csv.reader(io.StringIO(text.split("\n", 1)[1], newline=""))
    next(reader), next(reader)
    expected_line = 1 + reader.line_num + 1
    report = validate_bundle(root)
    bad = [f for f in report.findings if f.rule.startswith("schema") and f.field == "Status"]
    assert bad and bad[0].file == "data/Case/part-00002.csv" and bad[0].line == expected_line
    with part.open(newline="") as fh:
        lines = fh.read().split("\n")
    assert "Not A Status" in "\n".join(lines[expected_line - 1 : expected_line + 5])
    mismatch = [f for f in report.findings if f.rule == "bundle.hash-mismatch"]
    assert [f.file for f in mismatch] == ["data/Case/part-00002.csv"]


def _break(root: Path, how: str) -> str:
    """Break the layout of Case; the file the error must name."""
    folder = root / "data" / "Case"
    last = sorted(folder.iterdir())[-1]
    if how == "part-missing":
        (folder / "part-00002.csv").unlink()
        return "data/Case/part-00002.csv"
    if how == "last-part-missing":
        last.unlink()
        return f"data/Case/{last.name}"
    if how == "stray-part":
        n = len(list(folder.iterdir())) + 1
        shutil.copy(last, folder / f"part-{n:05d}.csv")
        return f"data/Case/part-{n:05d}.csv"
    if how == "stray-file":
        (folder / "notes.txt").write_text("mine\n")
        return "data/Case/notes.txt"
    if how == "both-layouts":
        (root / "data" / "Case.csv").write_bytes((folder / "part-00001.csv").read_bytes())
        return "data/Case.csv"
    if how == "folder-for-a-single-file-object":
        (root / "data" / "User").mkdir()
        shutil.copy(root / "data" / "User.csv", root / "data" / "User" / "part-00001.csv")
        (root / "data" / "User.csv").unlink()
        return "data/User"
    raise AssertionError(how)


HOW = [
    "part-missing",
    "last-part-missing",
    "stray-part",
    "stray-file",
    "both-layouts",
    "folder-for-a-single-file-object",
]


@pytest.mark.parametrize("how", HOW)
def test_a_broken_layout_is_one_error_naming_the_file(parted: Path, tmp_path: Path, how: str) -> None:
    root = copy_bundle(parted, tmp_path / "b")
    named = _break(root, how)
    sobject = named.split("/")[1].split(".")[0]
    with pytest.raises(BundleError) as caught:
        Bundle(root).read_raw(sobject, MODEL.get(sobject))
    assert str(root / named) in str(caught.value)
    assert getattr(caught.value, "file", None) == str(root / named)
    report = validate_bundle(root)
    csv_findings = [f for f in report.findings if f.rule == "bundle.csv"]
    assert len(csv_findings) == 1 and csv_findings[0].file == named
    assert report.exit_code == 2


@pytest.mark.parametrize("size", [0, 4095, 100_000_001, -1])
def test_a_part_size_outside_one_bulk_upload_is_refused(size: int) -> None:
    from flows.build import check_options
    from schemas.errors import UsageError

    with pytest.raises(UsageError, match="--part-bytes must be between 4,096 and 100,000,000"):
        check_options(BuildOptions(part_bytes=size))


def test_the_cli_builds_in_parts_and_refuses_a_part_size_too_small(tmp_path: Path) -> None:
    from tests.flows.test_cli import orgseed

    refused = orgseed("build", "--part-bytes", "100", "--no-prefect", "--out", str(tmp_path / "x"))
    assert refused.returncode == 2 and "--part-bytes must be between 4,096" in refused.stderr
    assert not (tmp_path / "x").exists()
    out = tmp_path / "b"
    args = ["--profile", str(SMALL_PROFILE), "--per-task", "0", "--no-prefect", "--out", str(out)]
    done = orgseed("build", *args, "--part-bytes", "50000")
    assert done.returncode == 0, done.stderr
    manifest = _manifest(out)
    assert manifest["data_parts"] == {"max_bytes": 50_000}
    assert len(manifest["objects"]["EmailMessage"]["parts"]) == len(
        list((out / "data" / "EmailMessage").iterdir())
    )
    assert orgseed("validate", str(out)).returncode == 0


@given(
    st.lists(st.binary(min_size=1, max_size=300), max_size=60),
    st.integers(min_value=1, max_value=2000),
)
def test_split_rows_keeps_order_and_size(rows: list[bytes], limit: int) -> None:
    header = b"Id,Name\n"
    parts = split_rows(header, rows, limit)
    assert [r for part in parts for r in part] == rows  # every row once, in order
    assert parts and all(part or not rows for part in parts)  # no empty part (one empty file for no rows)
    for part in parts:
        assert len(header) + sum(map(len, part)) <= limit or len(part) <= 1  # over only for one row (or none)
    for a, b in itertools.pairwise(parts):
        assert (
            len(header) + sum(map(len, a)) + len(b[0]) > limit
        )  # a part ends only when the next row won't fit


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=MIN_PART_BYTES, max_value=100_000))  # Case is ~82 KB: parts or one file
def test_any_part_size_reads_back_the_same_records(
    small_bundle: Path, tmp_path_factory: Any, size: int
) -> None:
    spec = MODEL.get("Case")
    whole = Bundle(small_bundle).read_raw("Case", spec)
    frame = type_frame(spec, whole.drop(columns="_line"))
    root = tmp_path_factory.mktemp("sizes")
    (root / "data").mkdir()
    entry, _ = Bundle(root).write_object(spec, frame, size)
    assert entry.sha256 == _manifest(small_bundle)["objects"]["Case"]["sha256"]
    (root / "manifest.json").write_text(
        json.dumps({**_manifest(small_bundle), "objects": {"Case": {"file": entry.path, "sha256": entry.sha256,
                    "rows": entry.rows, **({"parts": [{"file": p.path} for p in entry.parts]} if entry.parts else {})}}})
    )  # fmt: skip
    back = Bundle(root).read_raw("Case", spec)
    assert back.drop(columns="_line").equals(whole.drop(columns="_line"))


def test_a_lone_part_is_the_single_file_or_the_folder_by_its_size(
    small_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object within the part size is its single file, with no parts folder made (none to remove) and no
    temporary file left; one record larger than the part size is a folder with that one part."""
    spec = MODEL.get("Case")
    frame = (
        type_frame(spec, Bundle(small_bundle).read_raw("Case", spec).drop(columns="_line")).iloc[:1].copy()
    )
    root = tmp_path / "bundle"
    (root / "data").mkdir(parents=True)
    with monkeypatch.context() as m:
        m.setattr(Path, "rmdir", lambda self: pytest.fail(f"{self} was made and removed"))
        entry, _ = Bundle(root).write_object(spec, frame, 100_000)
    assert (entry.path, entry.parts) == ("data/Case.csv", ())
    assert sorted(p.name for p in (root / "data").iterdir()) == ["Case.csv"]
    frame["Description"] = "x" * (2 * MIN_PART_BYTES)
    entry, _ = Bundle(root).write_object(spec, frame, MIN_PART_BYTES)
    assert [p.path for p in entry.parts] == ["data/Case/part-00001.csv"]
    assert sorted(str(p.relative_to(root)) for p in (root / "data").rglob("*")) == [
        "data/Case",
        "data/Case/part-00001.csv",
    ]
    assert (
        entry.sha256 == hashlib.sha256((root / "data" / "Case" / "part-00001.csv").read_bytes()).hexdigest()
    )


def test_an_order_item_id_repeated_across_parts_is_found_where_it_is(parted: Path, tmp_path: Path) -> None:
    # OrderItem is validated a block at a time (never held): a repeat is found by hash, read again, and
    # reported at its part and line, as the whole-org check reports it
    root = copy_bundle(parted, tmp_path / "b")
    folder = root / "data" / "OrderItem"
    first, second = folder / "part-00001.csv", folder / "part-00002.csv"
    assert first.is_file() and second.is_file()
    ids = list(csv.reader(io.StringIO(first.read_text(), newline="")))
    rows = list(csv.reader(io.StringIO(second.read_text(), newline="")))
    col = rows[0].index("Id")
    rows[3][col] = ids[1][col]  # the third record of part 2 takes the first record's Id
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    second.write_text(buf.getvalue())
    whole, staged = validate_bundle(root, staged=False), validate_bundle(root)
    assert [f.to_json() for f in staged.findings] == [f.to_json() for f in whole.findings]
    dup = [f for f in staged.findings if f.rule == "integrity.duplicate-id"]
    assert [(f.object, f.record, f.file, f.line) for f in dup] == [
        ("OrderItem", ids[1][col], "data/OrderItem/part-00002.csv", 4)  # header, two records, then it
    ]
