"""The id map of an org (`uploads/<org id>/id_map.csv`): appended and fsynced, torn last lines dropped, a second
org id for one bundle record refused."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orgs.salesforce.state import HEADER, IdMap, StateError, upload_dir
from schemas.errors import UsageError

IDS = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r\n"), min_size=1)


def test_layout_is_the_one_the_audit_reads(tmp_path: Path) -> None:
    m = IdMap.for_org(tmp_path, "00D000000000001")
    assert m.record("Account", [("acc-1", "001A"), ("acc,2", '001"B')]) == 2
    assert m.path == tmp_path / "uploads" / "00D000000000001" / "id_map.csv"
    with open(m.path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [list(HEADER), ["Account", "acc-1", "001A"], ["Account", "acc,2", '001"B']]


def test_rerun_skips_known_pairs_and_refuses_a_second_org_id(tmp_path: Path) -> None:
    m = IdMap(tmp_path / "id_map.csv")
    m.record("Case", [("c1", "500A")])
    again = IdMap(tmp_path / "id_map.csv")
    assert again.record("Case", [("c1", "500A"), ("c2", "500B")]) == 1
    with pytest.raises(StateError, match="already uploaded as 500A"):
        again.record("Case", [("c1", "500Z")])
    assert IdMap(tmp_path / "id_map.csv").ids("Case") == {"c1": "500A", "c2": "500B"}


def test_a_torn_last_line_is_dropped_and_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "id_map.csv"
    IdMap(path).record("Case", [("c1", "500A")])
    with open(path, "ab") as f:
        f.write(b"Case,c2,50")  # a kill in the middle of an append
    m = IdMap(path)
    assert m.ids("Case") == {"c1": "500A"}
    m.record("Case", [("c3", "500C")])
    assert path.read_text().splitlines() == [",".join(HEADER), "Case,c1,500A", "Case,c3,500C"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,name\n", r":1: header"),
        ("object,bundle_id,org_id\nCase,c1\n", r":2: expected object,bundle_id,org_id"),
        ("object,bundle_id,org_id\nCase,c1,500A\nCase,c1,500B\n", r":3: Case c1 maps to 500B"),
        ("object,bundle_id,org_id\n1Bad,c1,500A\n", r":2: expected"),
    ],
)
def test_damaged_maps_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "id_map.csv"
    path.write_text(text)
    with pytest.raises(StateError, match=message) as caught:
        IdMap(path)
    assert caught.value.file == str(path) and caught.value.exit_code == 1


def test_org_ids_and_names_are_checked(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a Salesforce id"):
        upload_dir(tmp_path, "../escape")
    with pytest.raises(UsageError, match="multi-line"):
        IdMap(tmp_path / "m.csv").record("Case", [("a\nb", "500A")])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(IDS, IDS), max_size=20), st.integers(min_value=0, max_value=400))
def test_any_kill_point_keeps_every_whole_row(
    tmp_path_factory: pytest.TempPathFactory, pairs: list[tuple[str, str]], cut: int
) -> None:
    """A kill can stop a write at any byte: the rows before it survive, exactly, and appends go on cleanly."""
    path = tmp_path_factory.mktemp("kill") / "id_map.csv"
    expected: dict[str, str] = {}
    m = IdMap(path)
    for b, o in pairs:
        if expected.setdefault(b, o) == o:
            m.record("Account", [(b, o)])
    data = path.read_bytes() if path.exists() else b""
    header = len(",".join(HEADER)) + 1
    cut = min(len(data), header + cut)
    if data:
        path.write_bytes(data[:cut])
    survived = IdMap(path).ids("Account") if data else {}
    # the survivors are exactly the rows whose line ended before the cut
    whole = data[: data[:cut].rfind(b"\n") + 1].decode() if data else ""
    with_rows = list(csv.reader(io.StringIO(whole, newline="")))[1:]
    assert survived == {b: o for _, b, o in with_rows}
    assert all(expected[b] == o for b, o in survived.items())
    if data:
        resumed = IdMap(path)
        resumed.record("Account", [(b, expected[b]) for b in expected if b not in survived])
        assert IdMap(path).ids("Account") == expected
