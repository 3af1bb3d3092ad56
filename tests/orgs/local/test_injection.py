"""Values are data, never SQL: quotes, backslashes and comment markers inside literals cannot change a
query, and no literal the user wrote ever appears in the SQL text."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from simple_salesforce import format_soql

from orgs.local.soql import ast, compile_soql, parse
from schemas.model import load_model
from tests.orgs.local.oracle import Frames

HOSTILE = [
    "x' OR '1'='1",
    '\'; DROP TABLE "Case"; --',
    "a\\' OR Id != null --",
    "*/ OR 1=1 /*",
    "Robert'); DELETE FROM \"Account\" WHERE ('1'='1",
    '" OR ""="',
    "%' OR '%'='",
    "\\",
    "-- comment",
    "; SELECT * FROM orgseed_meta",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_string_is_one_value(value: str, sf: Any) -> None:
    q = format_soql("SELECT Id, Subject FROM Case WHERE Subject = {} OR Origin = {}", value, value)
    assert sf.query(q)["totalSize"] == 0
    like = format_soql("SELECT COUNT() FROM Case WHERE Subject LIKE {}", "%" + value + "%")
    assert sf.query(like)["totalSize"] == 0
    # the store is intact and still answers
    assert sf.query("SELECT COUNT() FROM Case")["totalSize"] > 0
    assert sf.query("SELECT COUNT() FROM Account")["totalSize"] > 0


def test_quoted_data_is_found(sf: Any, frames: Frames) -> None:
    """A value that itself holds a quote round-trips exactly (escaped as simple-salesforce escapes it)."""
    subjects = [s for s in frames.frame("Case")["Subject"] if s and "'" in s]
    assert subjects, "the bundle should have subjects with apostrophes"
    text = subjects[0]
    want = sum(1 for s in frames.frame("Case")["Subject"] if s and s.lower() == text.lower())
    got = sf.query_all(format_soql("SELECT Id, Subject FROM Case WHERE Subject = {}", text))["records"]
    assert len(got) == want and all(r["Subject"].lower() == text.lower() for r in got)
    head = text.split("'")[0] + "'"
    like = sf.query_all(format_soql("SELECT Subject FROM Case WHERE Subject LIKE {}", "%" + head + "%"))[
        "records"
    ]
    assert like and all(head.lower() in r["Subject"].lower() for r in like)


def test_comment_markers_in_like_are_literal(sf: Any) -> None:
    n_all = sf.query("SELECT COUNT() FROM Case")["totalSize"]
    assert (
        sf.query("SELECT COUNT() FROM Case WHERE Subject LIKE '%--%' OR Subject LIKE '%/*%'")["totalSize"]
        < n_all
    )
    assert (
        sf.query("SELECT COUNT() FROM Case WHERE Subject != '--' AND Subject != '/*'")["totalSize"] == n_all
    )


def test_backslash_escapes_end_where_they_should(sf: Any) -> None:
    # 'a\\' is the string a\ ; the OR after it is SOQL, so every case matches
    n_all = sf.query("SELECT COUNT() FROM Case")["totalSize"]
    assert sf.query("SELECT COUNT() FROM Case WHERE Subject = 'a\\\\' OR Id != null")["totalSize"] == n_all


@pytest.mark.parametrize("value", HOSTILE)
def test_sql_text_never_holds_a_literal(value: str) -> None:
    model = load_model()
    sources = [
        format_soql("SELECT Id FROM Case WHERE Subject = {} AND Status IN {}", value, [value, "New"]),
        format_soql("SELECT Id, (SELECT Id FROM EmailMessages WHERE Subject = {}) FROM Case", value),
        format_soql("SELECT Status, COUNT(Id) FROM Case WHERE Origin != {} GROUP BY Status", value),
        format_soql(
            "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Case WHERE Subject LIKE {})", value
        ),
    ]
    for n, source in enumerate(sources):
        plan = compile_soql(source, model, date(2024, 6, 1))
        literals = [
            n.value for n in parse(source).walk() if isinstance(n, ast.Literal) and n.kind == "string"
        ]
        assert literals
        sqls = [plan.sql] + [
            it.plan.sql for it in (plan.shape.items if plan.shape else ()) if hasattr(it, "plan")
        ]
        for sql in sqls:
            assert "'" not in sql.replace("'%w'", "").replace("'%j'", ""), sql
            for lit in literals:
                assert str(lit) not in sql
        if n < 3:  # (a LIKE pattern is re-escaped for SQLite's ESCAPE, so compare only plain values)
            assert value in plan.params.values()


def test_sosl_terms_cannot_reach_fts_syntax(sf: Any) -> None:
    """Search words become quoted FTS tokens: FTS operators and quotes in the terms are just text."""
    plain = {r["Id"] for r in sf.search("FIND {Windbreaker} RETURNING Product2(Id)")["searchRecords"]}
    assert plain
    escaped_quote = sf.search('FIND {Windbreaker\\"} RETURNING Product2(Id)')["searchRecords"]
    assert {r["Id"] for r in escaped_quote} == plain
    # NEAR, a column filter and a quote are words or punctuation here, not FTS syntax
    assert sf.search("FIND {Windbreaker NEAR} RETURNING Product2(Id)")["searchRecords"] == []
    got = sf.search('FIND {"Name\\:Windbreaker"} RETURNING Product2(Id)')["searchRecords"]
    assert got == []
