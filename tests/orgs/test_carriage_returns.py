"""A text holding a carriage return (an LLM's text may: the text rules allow line breaks) survives every CSV
orgseed writes and every reader of it: the bundle's writer, `read_raw`, pandas' C reader behind
`iter_columns` (the store build, the task builders and checks), the served org, and the Bulk API 2.0 upload
path (the job's CSV, the org's parse of it, its results' CSV and the loader's reading of them).

Before, orgseed's writer left a lone carriage return bare, as Python's csv module does with "\\n" line ends;
pandas' reader then read "x\\r" as "x" and "p\\rq" as two rows, with no error.

Expected texts: the list below, and the file read back with the csv module (`newline=""`), here.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orgs.bundle import Bundle, data_digest, logical_data
from orgs.local.serve import LocalServer, disconnect, server_for
from orgs.local.writable.org import WritableOrg
from orgs.salesforce.load import BulkIngest, chunks, csv_bytes
from schemas.model import load_model
from tests.conftest import copy_bundle

HOSTILE = [
    "x\r",
    "\r",
    "p\rq",
    "a\r\nb",
    "ends in a break\r\n",
    'a "quote"\r, and a comma',
    "\r\r\n\n",
    "mixed\n\rline\rends\r\n",
]


def _csv_module_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def hostile(small_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of the small bundle whose first cases' descriptions are HOSTILE, written by the bundle's writer,
    with the manifest's hashes of Case brought up to date."""
    root = copy_bundle(small_bundle, tmp_path_factory.mktemp("cr") / "bundle")
    (root / "org.sqlite").unlink(missing_ok=True)
    bundle = Bundle(root)
    spec = load_model().get("Case")
    frame = bundle.read_object(spec)
    frame.loc[: len(HOSTILE) - 1, "Description"] = HOSTILE
    entry, _ = bundle.write_object(spec, frame)
    manifest = bundle.read_manifest()
    manifest["files"][entry.path] = entry.sha256
    manifest["objects"]["Case"]["sha256"] = entry.sha256
    manifest["data_sha256"] = data_digest(logical_data(manifest["objects"]))
    bundle.write_manifest(manifest)
    yield root
    disconnect(root)


def test_the_written_file_holds_every_text_and_changes_nothing_else(
    hostile: Path, small_bundle: Path
) -> None:
    before = _csv_module_rows(small_bundle / "data" / "Case.csv")
    after = _csv_module_rows(hostile / "data" / "Case.csv")
    assert [r["Description"] for r in after[: len(HOSTILE)]] == HOSTILE
    for old, new in zip(before, after, strict=True):
        assert {**old, "Description": None} == {**new, "Description": None}
    assert after[len(HOSTILE) :] == before[len(HOSTILE) :]
    raw = (hostile / "data" / "Case.csv").read_bytes()
    assert b'"p\rq"' in raw and b',"\r",' not in raw.replace(b'"\r"', b"")  # quoted, as RFC 4180 asks


def _expected(hostile: Path) -> dict[str, str | None]:
    return {r["Id"]: r["Description"] or None for r in _csv_module_rows(hostile / "data" / "Case.csv")}


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("rows", [None, 5])
def test_the_bundle_readers_read_the_texts_back(hostile: Path, rows: int | None, share: bool) -> None:
    expected = _expected(hostile)
    bundle = Bundle(hostile)
    frames = list(bundle.iter_columns("Case", ["Description", "Id"], rows=rows, share=share))
    got = [(i, d) for f in frames for i, d in zip(f["Id"], f["Description"], strict=True)]
    assert got == list(expected.items())
    raw = bundle.read_raw("Case")
    assert dict(zip(raw["Id"], raw["Description"], strict=True)) == expected
    streamed = [
        (i, d)
        for f in bundle.iter_raw("Case", rows=7)
        for i, d in zip(f["Id"], f["Description"], strict=True)
    ]
    assert streamed == list(expected.items())
    columns = bundle.read_columns("Case", ["Id", "Description"])
    assert dict(zip(columns["Id"], columns["Description"], strict=True)) == expected


def test_the_served_org_answers_the_texts(hostile: Path) -> None:
    expected = _expected(hostile)
    sf = server_for(hostile).client()
    ids = list(expected)[: len(HOSTILE)]
    quoted = ", ".join(f"'{i}'" for i in ids)
    records = sf.query(f"SELECT Id, Description FROM Case WHERE Id IN ({quoted})")["records"]
    assert {r["Id"]: r["Description"] for r in records} == {i: expected[i] for i in ids}
    assert sf.query("SELECT COUNT() FROM Case")["totalSize"] == len(expected)


def test_an_upload_job_carries_the_texts_there_and_back(tmp_path: Path) -> None:
    """The job's CSV (`csv_bytes`), the org's parse of it, its successful results (the rows echoed) and the
    loader's reading of them, then the records queried back."""
    org = WritableOrg(tmp_path / "state", edition="enterprise")
    server = LocalServer(tmp_path / "state", org=org).start()
    try:
        sf = server.client()
        rows = [[f"Case {n}", text] for n, text in enumerate(HOSTILE)]
        data = csv_bytes(["Subject", "Description"], rows)
        parsed = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
        assert parsed == [["Subject", "Description"], *rows]
        outcome = BulkIngest(sf, wait=0.05).run("Case", "insert", data)
        assert (outcome.processed, outcome.failed) == (len(HOSTILE), 0), outcome
        assert sorted((r["Subject"], r["Description"]) for r in outcome.successes) == sorted(map(tuple, rows))
        back = sf.query_all("SELECT Subject, Description FROM Case")["records"]
        answered: dict[str, Any] = {r["Subject"]: r["Description"] for r in back}
        assert answered == dict(rows)
    finally:
        server.stop()
        org.close()


_UPLOAD_CELL = st.text(alphabet=st.sampled_from(list('ab,"\r\n é')), max_size=5)


@settings(max_examples=300, deadline=None)
@given(
    header=st.lists(st.sampled_from(["Id", "Name", "Body"]), min_size=1, max_size=3),
    data=st.data(),
    limit=st.integers(min_value=20, max_value=120),  # a header fits (at most 15 bytes)
)
def test_upload_chunks_stay_within_the_limit_and_keep_every_row(
    header: list[str], data: st.DataObject, limit: int
) -> None:
    """`chunks` splits an upload's rows in order, none lost, each job's CSV (`csv_bytes`, measured here) within
    the limit unless one row alone passes it; whatever the cells hold (quotes, commas, line breaks, a lone
    empty cell, which the writer writes as `""`)."""
    rows = data.draw(
        st.lists(st.lists(_UPLOAD_CELL, min_size=len(header), max_size=len(header)), max_size=12)
    )
    parts = chunks(header, rows, limit)
    assert [r for part in parts for r in part] == rows
    assert all(parts) or parts == [[]] == [rows]  # no empty job, but the one of no rows
    for part in parts:
        size = len(csv_bytes(header, part))
        assert size <= limit or len(part) == 1, (size, part)
        assert list(csv.reader(io.StringIO(csv_bytes(header, part).decode(), newline=""))) == [header, *part]
    # no two neighbouring jobs would have fit in one
    for a, b in itertools.pairwise(parts):
        assert len(csv_bytes(header, [*a, b[0]])) > limit
