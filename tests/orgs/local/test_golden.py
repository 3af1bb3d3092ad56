"""The golden corpus: every query goes through simple-salesforce over HTTPS to the served org, and its
answer must equal the pandas oracle's, computed independently from the bundle's CSVs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.orgs.local.conftest import FIXTURES, fill, fill_args
from tests.orgs.local.oracle import Frames, Oracle, flatten, same_rows

CORPUS = [
    json.loads(line)
    for line in (FIXTURES / "golden.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
]


def test_corpus_size() -> None:
    families = {e["family"] for e in CORPUS}
    assert len(CORPUS) >= 150
    assert {"records", "count", "aggregate", "children", "search"} <= families
    assert len({e["id"] for e in CORPUS}) == len(CORPUS), "golden ids must be unique"


def top_keys(fields: list[str]) -> list[str]:
    keys: list[str] = []
    for f in fields:
        head = f.split(".")[0]
        if head not in keys:
            keys.append(head)
    return keys


def check_attributes(record: dict[str, Any]) -> None:
    attrs = record["attributes"]
    assert set(attrs) == {"type", "url"}
    assert attrs["url"].startswith(f"/services/data/v59.0/sobjects/{attrs['type']}/")
    assert next(iter(record)) == "attributes"


def run_records(sf: Any, q: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    result = sf.query_all(q)
    out = []
    for rec in result["records"]:
        check_attributes(rec)
        assert rec["attributes"]["type"] == args["object"]
        assert list(rec)[1:] == top_keys(args["fields"]), "fields must come in SELECT order"
        out.append({f: flatten(rec, f) for f in args["fields"]})
    assert result["totalSize"] == len(out)
    return out


@pytest.mark.parametrize("entry", CORPUS, ids=[e["id"] for e in CORPUS])
def test_golden(entry: dict[str, Any], sf: Any, oracle: Oracle, frames: Frames) -> None:
    q = fill(entry["q"], frames)
    args = fill_args(entry["args"], frames)
    family = entry["family"]
    if family == "records":
        got = run_records(sf, q, args)
        want = oracle.records(args)
        assert same_rows(got, want, entry["ordered"]), (
            f"{q}\n got {len(got)}: {got[:3]}\nwant {len(want)}: {want[:3]}"
        )
    elif family == "count":
        result = sf.query(q)
        assert result["records"] == [] and result["done"] is True
        assert result["totalSize"] == oracle.count(args), q
    elif family == "aggregate":
        result = sf.query(q)
        got = []
        for rec in result["records"]:
            assert rec["attributes"] == {"type": "AggregateResult"}
            assert list(rec)[1:] == [c[0] for c in args["columns"]], "AggregateResult keys in SELECT order"
            got.append({k: v for k, v in rec.items() if k != "attributes"})
        want = oracle.aggregate(args)
        assert same_rows(got, want, entry["ordered"]), f"{q}\n got {got[:5]}\nwant {want[:5]}"
    elif family == "children":
        rel = args["child"]["rel"]
        got = []
        for rec in sf.query_all(q)["records"]:
            check_attributes(rec)
            row: dict[str, Any] = {f: flatten(rec, f) for f in args["fields"]}
            nested = rec[rel]
            if nested is None:
                row[rel] = None
            else:
                assert nested["done"] is True and nested["totalSize"] == len(nested["records"])
                for child in nested["records"]:
                    check_attributes(child)
                    assert child["attributes"]["type"] == args["child"]["object"]
                row[rel] = [{f: flatten(c, f) for f in args["child"]["fields"]} for c in nested["records"]]
            got.append(row)
        want = oracle.with_children(args)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert same_rows(
                [{k: v for k, v in g.items() if k != rel}], [{k: v for k, v in w.items() if k != rel}], True
            )
            if w[rel] is None:
                assert g[rel] is None, q
            else:
                assert g[rel] is not None and same_rows(g[rel], w[rel], True), (
                    f"{q}\n got {g[rel]}\nwant {w[rel]}"
                )
    elif family == "search":
        result = sf.search(q)
        got = []
        for rec in result["searchRecords"]:
            check_attributes(rec)
            ret = next(
                r for r in args["returning"] if r["object"].lower() == rec["attributes"]["type"].lower()
            )
            got.append({"type": rec["attributes"]["type"], **{f: flatten(rec, f) for f in ret["fields"]}})
        want = oracle.search(args)
        ordered = all(r.get("order") for r in args["returning"])
        assert same_rows(got, want, ordered), f"{q}\n got {len(got)}: {got[:3]}\nwant {len(want)}: {want[:3]}"
        # results come grouped per RETURNING object, in RETURNING order
        types = [r["type"] for r in got]
        assert types == sorted(types, key=[r["object"] for r in args["returning"]].index)
    else:  # pragma: no cover - a corpus typo
        raise AssertionError(f"unknown family {family}")
