"""Reading the latent tables (validators/load.py `read_latent`): EmailMessage's is kept as the rows of the ids
whose last row says the email carries its case's offer. On random tables (ids repeated, kinds missing, the
rows cut into blocks anywhere) that is what pandas gives for the whole table read, deduplicated on the id
keeping the last row, then filtered; and the carriers `_messages` takes from either are the same."""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from orgs.bundle import CsvBlocks, read_csv_lines
from schemas.model import load_model
from validators.load import LATENT_COLUMNS, BundleData, _last_rows, read_latent

KINDS = ["", "agent_offer", "agent_ack", "customer_open"]
tables = st.lists(
    st.tuples(st.sampled_from(["02sA", "02sB", "02sC", "02sD", ""]), st.sampled_from(KINDS)), max_size=30
)


def _write(path: Path, rows: list[tuple[str, str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["Id", "_case", "_kind", "_agent"])
        for k, (rid, kind) in enumerate(rows):
            # a text over two lines now and then: `_line` is a row's first line, not its number
            out.writerow([rid, str(k), kind, "a\nb" if k % 4 == 3 else "7"])


@settings(max_examples=150, deadline=None)
@given(rows=tables, block=st.integers(min_value=1, max_value=8))
def test_the_last_rows_are_those_pandas_keeps(rows: list[tuple[str, str]], block: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "EmailMessage.csv"
        _write(path, rows)
        columns = LATENT_COLUMNS["EmailMessage"]
        got = _last_rows(
            CsvBlocks(path, "latent/EmailMessage.csv", columns=columns, rows=block), "_kind", "agent_offer"
        )
        whole = read_csv_lines(path, "latent/EmailMessage.csv", columns=columns)
        last = whole.drop_duplicates("Id", keep="last")
        expected = last[(last["_kind"] == "agent_offer").to_numpy()].reset_index(drop=True)
        assert list(got.columns) == list(expected.columns)
        assert got.to_dict("records") == expected.to_dict("records")
        assert str(got["_line"].dtype) == "int64"


def test_a_table_without_the_kind_is_kept_whole(tmp_path: Path) -> None:
    # a latent/EmailMessage.csv without `_kind`: nothing to select on, so every row is kept (the offer checks
    # then find no carrier, as when the whole table was read)
    (tmp_path / "latent").mkdir()
    path = tmp_path / "latent" / "EmailMessage.csv"
    path.write_text("Id,_case\n02sA,0\n02sA,1\n02sB,2\n", encoding="utf-8")
    data = BundleData(root=tmp_path, model=load_model())
    assert read_latent(data, ["EmailMessage"]) == ["EmailMessage"]
    table = data.latent["EmailMessage"]
    assert table["Id"].tolist() == ["02sA", "02sA", "02sB"] and table["_line"].tolist() == [2, 3, 4]
    assert data.latent_read == {"EmailMessage"} and not data.problems


def test_an_empty_table_keeps_its_header(tmp_path: Path) -> None:
    (tmp_path / "latent").mkdir()
    (tmp_path / "latent" / "EmailMessage.csv").write_text("Id,_case,_kind\n", encoding="utf-8")
    data = BundleData(root=tmp_path, model=load_model())
    read_latent(data, ["EmailMessage"])
    assert list(data.latent["EmailMessage"].columns) == ["Id", "_kind", "_line"]
    assert len(data.latent["EmailMessage"]) == 0
