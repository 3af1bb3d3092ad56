"""The bundle contract: Salesforce value formats, headers from the model, hashes, and loud failures."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import re
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import orgs.bundle as bundle_module
from orgs.bundle import (
    MAX_JSON_DEPTH,
    MIN_PART_BYTES,
    PART_BYTES,
    Bundle,
    BundleError,
    CsvBlocks,
    PackedColumn,
    _csv_lines,
    _csv_rows,
    _row_lines,
    csv_text,
    data_digest,
    format_frame,
    lines_of,
    load_json_bounded,
    read_csv_lines,
    read_text_regular,
    split_rows,
    utf8_lines,
)
from schemas.formats import datetime_column
from schemas.model import load_model

MODEL = load_model()
DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000\+0000$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def test_csv_values_use_salesforce_formats(small_bundle: Path) -> None:
    for spec in MODEL:
        with (small_bundle / "data" / f"{spec.name}.csv").open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        assert rows[0] == spec.field_names
        for row in rows[1:]:
            for f, value in zip(spec.fields, row, strict=True):
                if value == "":
                    assert f.nillable, f"{spec.name}.{f.name} empty but required"
                elif f.type == "datetime":
                    assert DATETIME.match(value), (spec.name, f.name, value)
                elif f.type == "date":
                    assert DATE.match(value)
                elif f.type == "boolean":
                    assert value in ("true", "false")
                elif f.type == "currency":
                    assert re.match(r"^\d+\.\d{2}$", value)


def test_manifest_hashes_match_the_files(small_bundle: Path) -> None:
    manifest = json.loads((small_bundle / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["format"] == "orgseed-bundle"
    for rel, digest in manifest["files"].items():
        assert hashlib.sha256((small_bundle / rel).read_bytes()).hexdigest() == digest
    assert manifest["data_sha256"] == data_digest(manifest["files"])
    assert set(manifest["counts"]) == set(MODEL.names)
    assert Bundle(small_bundle).verify_hashes() == []
    assert not (small_bundle / ".work").exists()


def test_latent_lists_are_json(small_bundle: Path) -> None:
    latent = pd.read_csv(small_bundle / "latent" / "Case.csv")
    chains = latent["_agents"].map(json.loads)
    assert chains.map(len).min() >= 1


def test_writing_a_frame_without_a_field_is_refused() -> None:
    spec = MODEL.get("Issue__c")
    with pytest.raises(BundleError, match="lacks the field\\(s\\) Description__c"):
        format_frame(spec, pd.DataFrame({"Id": ["a1MWs0000012u7BMAQ"], "Name": ["x"]}))
    with pytest.raises(BundleError, match="not fields of the model"):
        format_frame(spec, pd.DataFrame({"Id": ["x"], "Name": ["x"], "Description__c": [None], "Oops": [1]}))


def test_reading_a_truncated_row_names_file_and_line(tmp_path: Path, small_bundle: Path) -> None:
    src = (small_bundle / "data" / "Issue__c.csv").read_text().splitlines()
    (tmp_path / "data").mkdir()
    src[3] = src[3].split(",")[0]
    (tmp_path / "data" / "Issue__c.csv").write_text("\n".join(src) + "\n")
    with pytest.raises(BundleError, match=r"Issue__c\.csv:4: row has 1 cells but the header has 3"):
        Bundle(tmp_path).read_raw("Issue__c", MODEL.get("Issue__c"))


def test_missing_manifest_is_explained(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="not an orgseed bundle"):
        Bundle(tmp_path).read_manifest()


def test_lines_of_splits_as_stringio_does() -> None:
    """read_csv_lines feeds the CSV reader `lines_of(text)` instead of `io.StringIO(text, newline="")`: the
    same lines, endings kept (\\n, \\r\\n, a lone \\r), and no others (\\u2028 or \\f inside a line stay)."""
    rng = random.Random(7)
    for _ in range(5000):
        text = "".join(rng.choice('a\r\n,"\u2028\x0c\x1c\x85\v') for _ in range(rng.randint(0, 40)))
        assert list(lines_of(text)) == list(io.StringIO(text, newline="")), repr(text)


# pieces mixing line endings with 1- to 4-byte characters, and bytes that are not UTF-8 on their own
_PIECES = st.sampled_from(
    [
        b"a",
        b",",
        b'"',
        b"\r",
        b"\n",
        b"\r\n",
        "é".encode(),
        "€".encode(),
        "𝄞".encode(),
        b"\xff",
        b"\xe2\x82",
        b"\x80",
    ]
)


@settings(max_examples=400, deadline=None)
@given(data=st.lists(_PIECES, max_size=60).map(b"".join), chunk=st.integers(1, 9))
def test_utf8_lines_read_in_chunks_give_the_whole_texts_lines_or_its_error(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, chunk: int
) -> None:
    """Decoding a chunk at a time (chunks split characters and \r\n pairs) gives exactly the lines of the
    whole text, or the error, with the byte position, that reading the whole file gives."""
    path = tmp_path_factory.mktemp("u8") / "x.csv"
    path.write_bytes(data)
    try:
        want: list[str] | str = list(lines_of(read_text_regular(path, "x.csv")))
    except BundleError as exc:
        want = str(exc)
    try:
        with path.open("rb") as fh:
            got: list[str] | str = list(utf8_lines(fh, "x.csv", chunk))
    except BundleError as exc:
        got = str(exc)
    assert got == want


def test_a_csv_that_is_not_utf8_names_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_bytes(b"Id,Body\n" + b"a,ok\n" * 300_000 + b"b,caf\xe9\n")  # past the first chunk
    at = len(b"Id,Body\n" + b"a,ok\n" * 300_000 + b"b,caf")  # counted by hand from the bytes written
    with pytest.raises(BundleError, match=rf"x\.csv: not UTF-8 \(invalid continuation byte at byte {at}\)"):
        read_csv_lines(path, "x.csv")


@pytest.mark.parametrize("rows", [0, 3, 70, 9000])
def test_read_csv_lines_in_blocks(tmp_path: Path, rows: int) -> None:
    """A file longer than one block (READ_BLOCK rows) reads as its rows: empty cells None, a repeated value
    one string object across blocks, multi-line quoted cells and their first lines kept."""
    path = tmp_path / "x.csv"
    lines = ["Id,Kind,Body"]
    want_lines = []
    line = 2
    for k in range(rows):
        body = f'"line one {k}\r\nline two"' if k % 5 == 0 else (f"text {k}" if k % 7 else "")
        lines.append(f"id{k:05d},{'open' if k % 2 else ''},{body}")
        want_lines.append(line)
        line += 2 if k % 5 == 0 else 1
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    frame = read_csv_lines(path, "x.csv")
    assert list(frame.columns) == ["Id", "Kind", "Body", "_line"]
    assert frame["Id"].tolist() == [f"id{k:05d}" for k in range(rows)]
    assert frame["Kind"].tolist() == ["open" if k % 2 else None for k in range(rows)]
    assert frame["Body"].tolist() == [
        f"line one {k}\r\nline two" if k % 5 == 0 else (f"text {k}" if k % 7 else None) for k in range(rows)
    ]
    assert frame["_line"].tolist() == want_lines
    kinds = [v for v in frame["Kind"].tolist() if v is not None]
    assert len({id(v) for v in kinds}) <= 1


_SCRATCH = tempfile.TemporaryDirectory()  # hypothesis examples write here (a function fixture is not reset)
CELL = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)  # utf-8: no lone surrogate
# what may follow the well-formed rows: nothing, a short row, a long row, an unclosed quote, text after a
# closing quote, a byte that is not UTF-8
TAILS = [b"", b"a,b\n", b"a,b,c,d\n", b'a,b,"never closed\n', b'a,"x"y,c\n', b"a,b,caf\xe9\n"]


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(st.lists(CELL, min_size=3, max_size=3), max_size=30),
    block=st.integers(min_value=1, max_value=9),
    tail=st.sampled_from(TAILS),
    columns=st.sampled_from([None, ("Body",), ("Id", "Kind"), ()]),
)
def test_csv_blocks_read_what_read_csv_lines_reads(
    rows: list[list[str]], block: int, tail: bytes, columns: tuple[str, ...] | None
) -> None:
    """Read a block at a time, a CSV gives the rows (cells, lines) `read_csv_lines` gives, in blocks of at most
    `block` rows, or the same error; the physical line count is the file's."""
    path = Path(_SCRATCH.name) / "x.csv"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows([["Id", "Kind", "Body"], *rows])
    path.write_bytes(buf.getvalue().encode() + tail)
    try:
        whole = read_csv_lines(path, "x.csv", columns=columns)
    except BundleError as exc:
        with pytest.raises(BundleError) as caught:
            list(CsvBlocks(path, "x.csv", columns=columns, rows=block).frames())
        assert str(caught.value) == str(exc) and caught.value.line == exc.line
        return
    reader = CsvBlocks(path, "x.csv", columns=columns, rows=block)
    blocks = list(reader.frames())
    assert all(0 < len(b) <= block for b in blocks)
    assert reader.lines == whole.attrs["lines"]
    got = pd.concat(blocks, ignore_index=True) if blocks else whole.iloc[:0]
    assert list(got.columns) == list(whole.columns)
    assert got.to_dict("list") == whole.to_dict("list")
    # independently of the reader: the cells the csv module writes back, empty as None
    expected = [[c or None for c in row] for row in rows]
    kept = [i for i, name in enumerate(("Id", "Kind", "Body")) if columns is None or name in columns]
    assert got.drop(columns="_line").values.tolist() == [[row[i] for i in kept] for row in expected]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), CELL.filter(bool)), max_size=40), max_size=6))
def test_a_packed_column_gives_back_its_cells(blocks: list[list[str | None]]) -> None:
    column = PackedColumn()
    for cells in blocks:
        column.add(cells)
    flat = [c for cells in blocks for c in cells]
    assert len(column) == len(flat)
    out = column.array()
    assert out.dtype == object and out.tolist() == flat


def test_a_packed_column_of_repeated_values_shares_them_and_of_distinct_ones_does_not() -> None:
    repeated, distinct = PackedColumn(), PackedColumn()
    for k in range(3):
        repeated.add([f"case{j % 5}" for j in range(100)] + [None])
        distinct.add([f"id{k}-{j}" for j in range(100)])
    values = [v for v in repeated.array().tolist() if v is not None]
    assert len(values) == 300 and len({id(v) for v in values}) == 5
    assert len({id(v) for v in distinct.array().tolist()}) == 300


def _parts_bundle(root: Path, header: list[str], parts: list[list[list[str]]]) -> Bundle:
    """A bundle folder holding object X as parts written by the csv module (no manifest: either layout)."""
    folder = root / "data" / "X"
    folder.mkdir(parents=True, exist_ok=True)
    for k, rows in enumerate(parts, start=1):
        with (folder / f"part-{k:05d}.csv").open("w", newline="", encoding="utf-8") as fh:
            # (every cell quoted: the csv module writing "\n" lines leaves a lone "\r" bare, which no reader reads
            # back; what `iter_columns` does with such a file is the next tests' matter)
            csv.writer(fh, lineterminator="\n", quoting=csv.QUOTE_ALL).writerows([header, *rows])
    return Bundle(root)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.sampled_from(["", "open", "closed", "é"]), CELL), min_size=1, max_size=30),
        min_size=1,
        max_size=3,
    ),
    st.integers(min_value=1, max_value=9),
)
def test_iter_columns_shared_or_not_reads_the_same_cells(
    parts: list[list[tuple[str, str]]], rows: int
) -> None:
    """Sharing equal cells changes no value: the frames are those read without it (strings, None for
    empty, the same index), whatever the block size and the parts; expected cells: what the csv module wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        bundle = _parts_bundle(Path(tmp), ["Kind", "Body"], [[list(r) for r in part] for part in parts])
        plain = list(bundle.iter_columns("X", ["Body", "Kind"], rows=rows))
        shared = list(bundle.iter_columns("X", ["Body", "Kind"], rows=rows, share=True))
    assert len(plain) == len(shared)
    for a, b in zip(plain, shared, strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    got = pd.concat(shared, ignore_index=True)
    expected = [[body or None, kind or None] for part in parts for kind, body in part]
    assert got.values.tolist() == expected


_CR_CELL = st.text(alphabet=st.sampled_from(list('ab,"\r\n é')), max_size=6)


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.lists(st.lists(_CR_CELL, min_size=3, max_size=3), max_size=8), min_size=1, max_size=3),
    ending=st.sampled_from(["\n", "\r\n"]),
    quoting=st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]),
    rows=st.sampled_from([None, 1, 3]),
    share=st.booleans(),
    columns=st.sampled_from([["Body", "Id"], ["Kind"], ["Id", "Kind", "Body"]]),
)
def test_iter_columns_reads_what_read_raw_reads_of_any_file(
    parts: list[list[list[str]]],
    ending: str,
    quoting: Any,
    rows: int | None,
    share: bool,
    columns: list[str],
) -> None:
    """Whatever the csv module writes (a carriage return left bare in a cell, CRLF or LF line ends, as a hand
    edit may leave a bundle), `iter_columns` (pandas' C reader, or the csv module for a file holding a
    carriage return) gives the cells `read_raw` gives, or raises the BundleError it raises: nothing read
    silently otherwise (pandas alone read "x\\r" as "x" and "p\\rq" as two rows)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "data" / "X"
        folder.mkdir(parents=True)
        for k, part in enumerate(parts, start=1):
            with (folder / f"part-{k:05d}.csv").open("w", newline="", encoding="utf-8") as fh:
                csv.writer(fh, lineterminator=ending, quoting=quoting).writerows(
                    [["Id", "Kind", "Body"], *part]
                )
        bundle = Bundle(tmp)
        try:
            raw = bundle.read_raw("X")
        except BundleError as exc:
            with pytest.raises(BundleError) as caught:
                list(bundle.iter_columns("X", columns, rows=rows, share=share))
            assert caught.value.file == exc.file and caught.value.line == exc.line
            return
        frames = list(bundle.iter_columns("X", columns, rows=rows, share=share))
    assert all(list(f.columns) == columns for f in frames)
    assert all(rows is None or len(f) <= rows for f in frames)
    got = pd.concat(frames, ignore_index=True)
    assert got.values.tolist() == raw[columns].values.tolist()


def test_a_file_with_a_bare_carriage_return_is_read_as_the_csv_module_reads_it(tmp_path: Path) -> None:
    """By hand, the case pandas' reader got wrong: "x\\r" at a row's end and "p\\rq" in its middle."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "X.csv").write_bytes(b"Id,Body\n1,x\r\n2,ok\n")
    assert Bundle(tmp_path).read_columns("X", ["Body"])["Body"].tolist() == ["x", "ok"]  # a CRLF end, as csv
    (data / "X.csv").write_bytes(b"Id,Body,Kind\n1,p\rq,a\n")
    with pytest.raises(BundleError) as caught:
        Bundle(tmp_path).read_columns("X", ["Id"])
    assert caught.value.line == 2 and "row has 2 cells but the header has 3" in str(caught.value)
    latent = tmp_path / "latent"
    latent.mkdir()
    (latent / "X.csv").write_bytes(b'Id,Note,Kind\n1,"a\rb",\n2,,x\r\n')
    assert Bundle(tmp_path).read_latent("X").values.tolist() == [["1", "a\rb", None], ["2", None, "x"]]
    assert Bundle(tmp_path).read_latent("X", ["Kind", "Note"]).values.tolist() == [
        [None, "a\rb"],
        ["x", None],
    ]
    (latent / "X.csv").write_bytes(b"Id,Note\n1,p\rq\n")
    with pytest.raises(BundleError) as caught:
        Bundle(tmp_path).read_latent("X")
    assert caught.value.line == 3  # "q" begins line 3: a row of one cell


def test_iter_columns_shares_a_repeating_column_across_blocks_and_parts_and_not_a_distinct_one(
    tmp_path: Path,
) -> None:
    rows = [[f"owner{j % 4}", f"id{k}-{j}"] for k in range(2) for j in range(100)]
    bundle = _parts_bundle(tmp_path, ["OwnerId", "Id"], [rows[:100], rows[100:]])
    frames = list(bundle.iter_columns("X", ["OwnerId", "Id"], rows=30, share=True))
    got = pd.concat(frames, ignore_index=True)
    assert got["OwnerId"].tolist() == [r[0] for r in rows] and got["Id"].tolist() == [r[1] for r in rows]
    assert len({id(v) for v in got["OwnerId"]}) == 4  # one string per owner, over 7 blocks and 2 parts
    assert len({id(v) for v in got["Id"]}) == 200
    unshared = pd.concat(bundle.iter_columns("X", ["OwnerId"], rows=30), ignore_index=True)
    assert len({id(v) for v in unshared["OwnerId"]}) > 4  # what sharing saves: a string per cell


def test_read_csv_lines_keeps_only_the_columns_asked_for(tmp_path: Path) -> None:
    """With `columns`, the frame is the whole read's columns of those names (and `_line`); rows are still
    checked whole: a short row is reported even when the missing cell is in a column left out."""
    path = tmp_path / "x.csv"
    path.write_text('Id,Kind,Body\nid1,open,"two\nlines"\nid2,,text\n')
    frame = read_csv_lines(path, "x.csv", columns=("Body", "Id", "Missing"))
    assert list(frame.columns) == ["Id", "Body", "_line"]
    assert frame.to_dict("list") == {"Id": ["id1", "id2"], "Body": ["two\nlines", "text"], "_line": [2, 4]}
    assert list(read_csv_lines(path, "x.csv", columns=()).columns) == ["_line"]
    path.write_text("Id,Kind,Body\nid1,open,text\nid2,open\n")
    with pytest.raises(BundleError, match=r"x\.csv:3: row has 2 cells but the header has 3"):
        read_csv_lines(path, "x.csv", columns=("Id",))


# -- the vectorised write path writes what the reference formatter writes -------------------------------------

_TEXT = st.one_of(
    st.none(),
    st.just(float("nan")),
    st.text(alphabet=st.sampled_from(list("ab ,\"\n\r\t;é€😀\\'")), max_size=8),
)
_SECONDS = st.integers(min_value=-2_000_000_000, max_value=8_000_000_000)  # 1906 .. 2223


def _column(ftype: str, n: int) -> st.SearchStrategy[pd.Series]:
    """A column of `n` values for a field of `ftype`, in the dtypes generator code hands the writer."""
    if ftype in ("datetime", "date"):
        stamps = st.lists(st.one_of(st.none(), _SECONDS), min_size=n, max_size=n).map(
            lambda xs: [None if x is None else pd.Timestamp(x, unit="s") for x in xs]
        )
        return st.one_of(
            st.builds(  # datetime64 of any unit pandas holds
                lambda u, xs: pd.Series(xs, dtype="datetime64[ns]").astype(f"datetime64[{u}]"),
                st.sampled_from(["s", "ms", "ns"]),
                stamps,
            ),
            stamps.map(lambda xs: pd.Series(xs, dtype=object)),  # Timestamps and None in an object column
        )
    if ftype == "boolean":
        return st.one_of(
            st.lists(st.booleans(), min_size=n, max_size=n).map(lambda xs: pd.Series(xs, dtype=bool)),
            st.lists(st.one_of(st.none(), st.booleans()), min_size=n, max_size=n).map(
                lambda xs: pd.Series(xs, dtype=object)
            ),
        )
    if ftype in ("currency", "double", "int"):
        return st.one_of(
            st.lists(st.integers(-(10**12), 10**12), min_size=n, max_size=n).map(lambda xs: pd.Series(xs)),
            st.lists(
                st.one_of(st.just(float("nan")), st.floats(-1e9, 1e9, allow_nan=False)),
                min_size=n,
                max_size=n,
            ).map(lambda xs: pd.Series(xs, dtype="float64")),
        )
    return st.lists(_TEXT, min_size=n, max_size=n).map(lambda xs: pd.Series(xs, dtype=object))


@st.composite
def _object_frames(draw: st.DrawFn) -> tuple[Any, pd.DataFrame]:
    spec = draw(st.sampled_from(list(MODEL)))
    n = draw(st.integers(min_value=0, max_value=12))
    frame = pd.DataFrame({f.name: draw(_column(f.type, n)) for f in spec.fields}, index=range(n))
    return spec, frame


class _Label(str):
    """A str subclass whose str() differs from its text: the csv writer writes the text."""

    def __str__(self) -> str:
        return "label"


_TEXTS = _TEXT.filter(lambda t: isinstance(t, str))
# what a cell may hold, kind by kind: a column holds one kind (as a frame's column does) or any mix of them
_KINDS = [
    _TEXT,
    st.integers(-(10**20), 10**20),
    st.floats(),
    st.booleans(),
    st.integers(0, 999).map(np.int64),
    st.floats(allow_nan=False).map(np.float64),
    _TEXTS.map(np.str_),
    _TEXTS.map(_Label),
]


@st.composite
def _cell_columns(draw: st.DrawFn) -> list[list[Any]]:
    width = draw(st.integers(min_value=0, max_value=4))
    n = draw(st.integers(min_value=0, max_value=6))
    kinds = [draw(st.sampled_from([*_KINDS, st.one_of(*_KINDS)])) for _ in range(width)]
    return [draw(st.lists(kind, min_size=n, max_size=n)) for kind in kinds]


@settings(max_examples=400, deadline=None)
@given(_cell_columns())
def test_csv_rows_are_what_the_csv_writer_writes(columns: list[list[Any]]) -> None:
    """`_csv_rows` writes, column by column, the text Python's csv writer writes row by row (QUOTE_MINIMAL)
    with "\\r\\n" line ends, so that it quotes a cell holding either character, each row then ended by "\\n":
    None empty, other values as str() makes them (a str subclass as its text), quotes doubled, a cell with a
    comma, a quote, a line feed or a carriage return quoted, a lone empty cell quoted."""
    expected = []
    for row in zip(*columns, strict=True):
        out = io.StringIO()
        csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL).writerow(row)
        assert out.getvalue().endswith("\r\n")
        expected.append(out.getvalue()[:-2] + "\n")
    assert "".join(_csv_rows(columns)) == "".join(expected)
    # and `csv_text`, the same writer for rows, for the CSVs beside a bundle's
    if columns and columns[0]:
        assert csv_text(zip(*columns, strict=True)) == "".join(expected)


@settings(max_examples=300, deadline=None)
@given(_object_frames())
def test_row_lines_match_the_reference_formatter(case: tuple[Any, pd.DataFrame]) -> None:
    """`_row_lines` (numpy per column) gives the text `_csv_lines(format_frame(...))` (schemas/formats.py
    per column, then the csv writer) gives, for every object and the dtypes the generators use, with nulls
    (None, NaN, NaT), unicode, quotes, separators and line breaks."""
    spec, frame = case
    assert _row_lines(spec, frame) == _csv_lines(format_frame(spec, frame))[1:]


_WRITE_BYTES = st.sampled_from([1, 60, 250, bundle_module.WRITE_BYTES])


@settings(max_examples=150, deadline=None)
@given(
    _object_frames(),
    st.sampled_from([60, 300, MIN_PART_BYTES, PART_BYTES]),
    st.integers(1, 7),
    _WRITE_BYTES,
)
def test_written_object_is_the_reference_csv(
    tmp_path_factory: pytest.TempPathFactory, case: Any, limit: int, block_rows: int, block_bytes: int
) -> None:
    """write_object writes, as one file or in parts, the bytes of the reference CSV (header, then each row as
    `_csv_lines(format_frame(...))` writes it), grouped as `split_rows` groups them, whatever the number of
    rows formatted at a time (WRITE_ROWS, and fewer as WRITE_BYTES asks) and wherever a part ends in a block
    of rows."""
    spec, frame = case
    root = tmp_path_factory.mktemp("w")
    with (
        mock.patch.object(bundle_module, "WRITE_ROWS", block_rows),
        mock.patch.object(bundle_module, "WRITE_BYTES", block_bytes),
    ):
        entry, _ = Bundle(root).write_object(spec, frame, limit)
    lines = [line.encode("utf-8") for line in _csv_lines(format_frame(spec, frame))]
    header, rows = lines[0], lines[1:]
    expected = [header + b"".join(part) for part in split_rows(header, rows, limit)]
    if entry.parts:
        written = [(root / p.path).read_bytes() for p in entry.parts]
        assert [p.rows for p in entry.parts] == [len(part) for part in split_rows(header, rows, limit)]
    else:
        written = [(root / entry.path).read_bytes()]
    assert written == expected
    assert entry.sha256 == hashlib.sha256(b"".join(lines)).hexdigest() and entry.rows == len(frame)


@settings(max_examples=80, deadline=None)
@given(_object_frames(), st.sampled_from([60, 300, PART_BYTES]), st.integers(1, 7), _WRITE_BYTES, st.data())
def test_fields_filled_as_they_are_written_give_the_same_bytes(
    tmp_path_factory: pytest.TempPathFactory,
    case: Any,
    limit: int,
    block_rows: int,
    block_bytes: int,
    data: st.DataObject,
) -> None:
    """write_object with some fields left out of the frame and put in each block of rows by `fill(rows, start)`
    (generator/spill.py's texts) writes the bytes of the whole frame written at once, and refuses a fill that
    lacks a field as it refuses a frame that does."""
    spec, frame = case
    names = [f.name for f in spec.fields]
    later = data.draw(st.lists(st.sampled_from(names), unique=True, min_size=1))
    starts: list[int] = []

    def fill(rows: pd.DataFrame, start: int) -> pd.DataFrame:
        starts.append(start)
        out = rows.copy()
        for name in later:
            out[name] = frame[name].iloc[start : start + len(rows)].to_numpy()
        return out

    whole_root, filled_root = tmp_path_factory.mktemp("whole"), tmp_path_factory.mktemp("filled")
    with (
        mock.patch.object(bundle_module, "WRITE_ROWS", block_rows),
        mock.patch.object(bundle_module, "WRITE_BYTES", block_bytes),
    ):
        whole, _ = Bundle(whole_root).write_object(spec, frame, limit)
        filled, _ = Bundle(filled_root).write_object(spec, frame.drop(columns=later), limit, fill)
    assert filled == whole
    paths = [p.path for p in whole.parts] or [whole.path]
    assert [(filled_root / p).read_bytes() for p in paths] == [(whole_root / p).read_bytes() for p in paths]
    assert len(starts) > 1 or len(frame) <= block_rows  # the fill was asked a block at a time
    missing = ", ".join(sorted(later, key=names.index))
    with pytest.raises(BundleError, match=f"lacks the field\\(s\\) {missing}\\. "):
        Bundle(filled_root).write_object(spec, frame.drop(columns=later), limit, lambda rows, start: rows)


_NOTES = ["a,b", 'say "hi"', "two\nlines", "", None, "plain"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(st.none(), _SECONDS), min_size=1, max_size=8),
    st.sampled_from(["s", "ms", "ns"]),
    st.integers(1, 4),
    _WRITE_BYTES,
)
def test_latent_datetimes_are_written_as_the_formatter_writes_them(
    tmp_path_factory: pytest.TempPathFactory,
    seconds: list[int | None],
    unit: str,
    block_rows: int,
    block_bytes: int,
) -> None:
    """A latent datetime column is written as schemas/formats.py `datetime_column` formats it (NaT empty),
    whatever its unit, beside latent lists (compact JSON; a later None as null), flags and text needing
    quotes; the same bytes whatever the number of rows formatted at a time (WRITE_ROWS)."""
    spec = MODEL.get("Issue__c")
    n = len(seconds)
    stamps = pd.Series(
        [None if s is None else pd.Timestamp(s, unit="s") for s in seconds], dtype="datetime64[ns]"
    )
    frame = pd.DataFrame(
        {
            "Id": [f"a1MWs0000012u7{i:04d}" for i in range(n)],
            "Name": ["x"] * n,
            "Description__c": [None] * n,
            "_when": stamps.astype(f"datetime64[{unit}]"),
            "_flag": [i % 2 == 0 for i in range(n)],
            "_chain": [[i, "a,b"] if i % 3 == 0 else None if i % 3 == 1 else {"k": i} for i in range(n)],
            "_note": [_NOTES[i % len(_NOTES)] for i in range(n)],
        }
    )
    root = tmp_path_factory.mktemp("latent")
    with (
        mock.patch.object(bundle_module, "WRITE_ROWS", block_rows),
        mock.patch.object(bundle_module, "WRITE_BYTES", block_bytes),
    ):
        entry = Bundle(root).write_object(spec, frame)[1]
    expected = pd.DataFrame(
        {
            "Id": frame["Id"],
            "_when": datetime_column(frame["_when"]),
            "_flag": ["true" if i % 2 == 0 else "false" for i in range(n)],
            "_chain": [json.dumps(v, separators=(",", ":")) for v in frame["_chain"]],
            "_note": frame["_note"],
        }
    )
    out = io.StringIO()
    expected.to_csv(out, index=False, lineterminator="\n")
    written = (root / "latent" / "Issue__c.csv").read_bytes()
    assert written.decode("utf-8") == out.getvalue()
    assert entry is not None and entry.rows == n and entry.bytes == len(written)
    assert entry.sha256 == hashlib.sha256(written).hexdigest()


def _depth_by_characters(text: str) -> int:
    """The deepest nesting of `text`'s brackets outside its strings, one character at a time (the
    definition `load_json_bounded` bounds)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet='[{]}"\\ 1', max_size=30))
def test_json_nesting_is_bounded_outside_strings(text: str) -> None:
    """`load_json_bounded` refuses a text exactly when its brackets outside strings (escapes and unterminated
    strings included) nest deeper than the bound, whether the text is valid JSON or not."""
    with mock.patch.object(bundle_module, "MAX_JSON_DEPTH", 2):
        try:
            load_json_bounded(text, "t.json")
            refused = False
        except BundleError as exc:
            refused = "nested more than 2 levels deep" in str(exc)
    assert refused == (_depth_by_characters(text) > 2)


def test_json_nesting_counts_no_bracket_inside_a_string() -> None:
    deep = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert load_json_bounded(deep, "t.json")
    inner = json.loads("[" * (MAX_JSON_DEPTH - 2) + "]" * (MAX_JSON_DEPTH - 2))
    doc = json.dumps({"a": '[[{"\\' * 100, "b": [inner]})  # 64 deep, and brackets in a string
    assert load_json_bounded(doc, "t.json")["b"] == [inner]
    with pytest.raises(BundleError, match="nested more than"):
        load_json_bounded("[" + deep + "]", "t.json")


def test_wide_rows_are_written_in_blocks_of_about_write_bytes() -> None:
    # rows of 1,000 bytes: a first block of FIRST_ROWS, then as many rows as fit WRITE_BYTES (8 MiB / 1,000 B
    # = 8,388), never more than WRITE_ROWS; the blocks cover every row once, in order
    sizes = []
    at = 0
    for start, stop, wrote in bundle_module._blocks(50_000):
        assert start == at and stop > start
        sizes.append(stop - start)
        wrote(1000 * (stop - start))
        at = stop
    assert at == 50_000 and sizes[0] == 2048
    assert set(sizes[1:-1]) == {8 * 1024 * 1024 // 1000}
    # narrow rows (20 bytes) are written WRITE_ROWS at a time
    sizes = []
    for start, stop, wrote in bundle_module._blocks(120_000):
        sizes.append(stop - start)
        wrote(20 * (stop - start))
    assert sizes[:3] == [2048, 50_000, 50_000] and sum(sizes) == 120_000
