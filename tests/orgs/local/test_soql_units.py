"""The SOQL compiler stage by stage: tokens, parser, SQL (golden pairs), relative dates."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pytest

from orgs.local.soql import SoqlParseError, SoqlTokenError, ast, compile_soql, parse, tokenize
from orgs.local.soql.dates import resolve
from orgs.local.soql.filters import to18
from orgs.local.soql.tokens import T
from schemas.model import load_model
from tests.orgs.local.conftest import FIXTURES

# -- tokens ------------------------------------------------------------------------------------------------


def test_tokens_carry_line_and_column() -> None:
    toks = tokenize("SELECT Id,\n  Subject\nFROM Case")
    found = {(t.text, t.line, t.col, t.offset) for t in toks if t.kind is T.IDENT}
    assert found == {
        ("SELECT", 1, 1, 0),
        ("Id", 1, 8, 7),
        ("Subject", 2, 3, 13),
        ("FROM", 3, 1, 21),
        ("Case", 3, 6, 26),
    }
    assert toks[-1].kind is T.EOF and toks[-1].offset == 30


def test_string_positions_across_lines() -> None:
    # plain strings (read in one step) and strings with escapes or line breaks (read character by
    # character) must agree on values, lines and columns; expected positions counted by hand
    text = "SELECT Id FROM Case\nWHERE Subject IN ('a b', 'it\\'s',\n  'two\nlines', 'x') AND S = ''"
    strings = [(t.value, t.line, t.col, t.offset, t.end) for t in tokenize(text) if t.kind is T.STRING]
    assert strings == [
        ("a b", 2, 19, 38, 43),
        ("it's", 2, 26, 45, 52),
        ("two\nlines", 3, 3, 56, 67),
        ("x", 4, 9, 69, 72),
        ("", 4, 22, 82, 84),
    ]
    after = next(t for t in tokenize(text) if t.kind is T.IDENT and t.text == "AND")
    assert (after.line, after.col) == (4, 14)


def test_literals_are_decoded() -> None:
    toks = tokenize(
        r"'it\'s \\ \"q\" \n' 42 -3.5 2024-02-29 2024-01-05T10:00:00Z 2024-01-05T12:30:00+02:30 '50\%'"
    )
    values = [t.value for t in toks[:-1]]
    assert values[0] == 'it\'s \\ "q" \n'
    assert values[1:3] == [42, -3.5]
    assert values[3] == date(2024, 2, 29)
    assert values[4] == datetime(2024, 1, 5, 10, 0, tzinfo=UTC)
    assert values[5] == datetime(2024, 1, 5, 10, 0, tzinfo=UTC)
    assert values[6] == "50\\%"  # kept for LIKE, which re-reads the raw text
    assert [t.kind for t in toks[:-1]] == [
        T.STRING,
        T.NUMBER,
        T.NUMBER,
        T.DATE,
        T.DATETIME,
        T.DATETIME,
        T.STRING,
    ]


@pytest.mark.parametrize(
    ("text", "col", "detail"),
    [
        ("SELECT Id FROM Case WHERE Subject = 'open", 37, "never closed"),
        ("SELECT Id FROM Case WHERE Subject = 'a\\zb'", 39, "Illegal character sequence"),
        ("SELECT Id FROM Case WHERE X = 2024-13-01", 31, "Invalid date"),
        ("SELECT Id FROM Case WHERE X = 2024-01-01T10:00:00", 50, "'<EOF>'"),
        ("SELECT Id FROM Case WHERE X = 12abc", 33, "character 'a'"),
        ("SELECT Id FROM Case WHERE X = @a", 31, "character '@'"),
    ],
)
def test_token_errors_are_located(text: str, col: int, detail: str) -> None:
    with pytest.raises(SoqlTokenError) as caught:
        tokenize(text)
    assert (caught.value.line, caught.value.col) == (1, col)
    assert detail in caught.value.detail
    assert caught.value.error_code == "MALFORMED_QUERY"


# -- parser ------------------------------------------------------------------------------------------------


def test_parse_tree_shape() -> None:
    q = parse(
        "SELECT Id, Account.Name, (SELECT Id FROM Cases LIMIT 2), COUNT(Id) c FROM Contact "
        "WHERE (LastName = 'a' OR LastName = 'b') AND CreatedDate = LAST_N_DAYS:7 "
        "GROUP BY Id HAVING COUNT(Id) > 1 ORDER BY LastName DESC NULLS LAST LIMIT 5 OFFSET 2"
    )
    assert [type(i.expr).__name__ for i in q.select] == ["FieldPath", "FieldPath", "SubQuery", "Call"]
    assert q.select[3].alias is not None and q.select[3].alias.name == "c"
    assert isinstance(q.where, ast.BoolOp) and q.where.op == "AND"
    assert isinstance(q.where.items[0], ast.BoolOp) and q.where.items[0].op == "OR"
    date_const = q.where.items[1]
    assert isinstance(date_const, ast.Compare) and isinstance(date_const.right, ast.DateConst)
    assert (date_const.right.name, date_const.right.n) == ("LAST_N_DAYS", 7)
    assert q.order_by[0].descending and q.order_by[0].nulls == "LAST"
    assert q.limit is not None and q.limit.count == 5 and q.offset is not None and q.offset.count == 2
    kinds = {type(n).__name__ for n in q.walk()}
    assert {"Query", "SubQuery", "Compare", "BoolOp", "Call", "Literal", "DateConst", "OrderItem"} <= kinds


def test_not_binds_to_the_next_condition() -> None:
    q = parse("SELECT Id FROM Case WHERE NOT Status = 'New' AND Priority = 'High'")
    assert isinstance(q.where, ast.BoolOp) and isinstance(q.where.items[0], ast.Not)


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("SELECT Id FROM Case WHERE A = 'x' AND B = 'y' OR C = 'z'", "OR"),
        ("SELECT Id FROM Case WHERE A = 'x' OR B = 'y' AND C = 'z'", "AND"),
        ("SELECT Id FROM Case c GARBAGE", "GARBAGE"),
        ("SELECT Id FROM Case ORDER BY", "<EOF>"),
    ],
)
def test_parse_errors_name_the_token(text: str, token: str) -> None:
    with pytest.raises(SoqlParseError) as caught:
        parse(text)
    assert caught.value.detail == f"unexpected token: '{token}'"
    assert caught.value.offset == (len(text) if token == "<EOF>" else text.index(token, 20))


def test_case_insensitive_keywords() -> None:
    a = parse("select id from case where status = 'x' order by id desc limit 1")
    b = parse("SELECT Id FROM Case WHERE Status = 'x' ORDER BY Id DESC LIMIT 1")
    assert repr(a).lower() == repr(b).lower()


# -- SQL (golden pairs) --------------------------------------------------------------------------------------


def _pairs() -> list[tuple[str, str, str, dict[str, object]]]:
    blocks = (FIXTURES / "to_sql.soql").read_text(encoding="utf-8").split("\n# title: ")[1:]
    out = []
    for block in blocks:
        title, rest = block.split("\n", 1)
        soql, after = rest.split("\n--\n", 1)
        sql, params = after.strip().split("\n-- params: ")
        out.append((title, soql, sql, json.loads(params)))
    return out


PAIRS = _pairs()


@pytest.mark.parametrize(("title", "soql", "sql", "params"), PAIRS, ids=[p[0] for p in PAIRS])
def test_to_sql(title: str, soql: str, sql: str, params: dict[str, object]) -> None:
    plan = compile_soql(soql, load_model(), date(2024, 6, 1))
    assert plan.sql == sql
    assert plan.params == params


def test_pairs_exist() -> None:
    assert len(PAIRS) >= 15


# -- dates and ids -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "n", "start", "end"),
    [
        ("TODAY", None, "2024-06-05", "2024-06-06"),  # a Wednesday
        ("YESTERDAY", None, "2024-06-04", "2024-06-05"),
        ("THIS_WEEK", None, "2024-06-02", "2024-06-09"),  # weeks start on Sunday
        ("LAST_WEEK", None, "2024-05-26", "2024-06-02"),
        ("LAST_N_DAYS", 1, "2024-06-04", "2024-06-06"),  # includes today
        ("NEXT_N_DAYS", 2, "2024-06-06", "2024-06-08"),  # starts tomorrow
        ("N_DAYS_AGO", 3, "2024-06-02", "2024-06-03"),
        ("LAST_90_DAYS", None, "2024-03-07", "2024-06-06"),
        ("THIS_MONTH", None, "2024-06-01", "2024-07-01"),
        ("LAST_N_MONTHS", 2, "2024-04-01", "2024-06-01"),  # whole months, current one excluded
        ("THIS_QUARTER", None, "2024-04-01", "2024-07-01"),
        ("LAST_QUARTER", None, "2024-01-01", "2024-04-01"),
        ("N_QUARTERS_AGO", 2, "2023-10-01", "2024-01-01"),
        ("LAST_YEAR", None, "2023-01-01", "2024-01-01"),
        ("LAST_N_YEARS", 2, "2022-01-01", "2024-01-01"),
        ("THIS_FISCAL_YEAR", None, "2024-01-01", "2025-01-01"),
    ],
)
def test_date_literal_ranges(literal: str, n: int | None, start: str, end: str) -> None:
    rng = resolve(literal, n, date(2024, 6, 5))
    assert (rng.start.isoformat(), rng.end.isoformat()) == (start, end)


def test_to18() -> None:
    assert to18("001Ws00001sslFp") == "001Ws00001sslFpIAI"
    assert to18("001Ws00001sslFpIAI") == "001Ws00001sslFpIAI"
