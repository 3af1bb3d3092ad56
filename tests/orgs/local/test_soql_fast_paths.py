"""The lexer's and parser's fast paths for long lists of plain strings give exactly what the general path
gives: the same tokens (kind, text, value, offsets, line, column) and the same syntax tree."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orgs.local.engine import LocalOrg
from orgs.local.soql import ast, compile_soql, parse, tokenize
from orgs.local.soql import tokens as tokens_module
from orgs.local.soql.errors import SoqlError
from schemas.model import load_model

QUERIES = [
    "SELECT Id FROM Case WHERE Id IN ('500A', 'x,y', '', 'b')",
    "SELECT Id FROM Case WHERE Id IN ('a','b'\t,  'c') AND Status != 'Closed'",
    "SELECT Id FROM Case\nWHERE OwnerId IN ('005A',\n'005B', '005C')  AND Id NOT IN ('a', 'it\\'s', 'c')",
    "SELECT Id FROM Case WHERE Id IN ('a', 'b', 'c'x) ",
    "SELECT Id FROM Case WHERE Id IN ('a', 1, 'b', 'c', 2024-01-01, 'd')",
    "SELECT Id FROM Case WHERE Subject IN ('" + "z" * 300 + "', 'a', '" + "y" * 300 + "')",
    "SELECT Id FROM Case WHERE Id IN (" + ", ".join(f"'{i:018d}'" for i in range(500)) + ")",
]


def _both(monkeypatch: pytest.MonkeyPatch, fn: object, text: str) -> tuple[object, object]:
    def run() -> object:
        try:
            return fn(text)  # type: ignore[operator]
        except Exception as exc:  # the error is compared too
            return (type(exc).__name__, str(exc))

    fast = run()
    with monkeypatch.context() as m:
        m.setattr(tokens_module, "_STRING_RUN", re.compile(r"(?!)"))
        general = run()
    return fast, general


@pytest.mark.parametrize("text", QUERIES)
def test_string_runs_tokenize_as_the_general_path(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    fast, general = _both(monkeypatch, tokenize, text)
    assert fast == general


@pytest.mark.parametrize("text", QUERIES)
def test_string_lists_parse_as_the_general_path(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    fast, general = _both(monkeypatch, parse, text)
    assert repr(fast) == repr(general)


def test_a_long_list_has_one_string_token_per_id() -> None:
    ids = [f"500{i:015d}" for i in range(1000)]
    toks = tokenize("SELECT Id FROM Case WHERE Id IN (" + ", ".join(f"'{i}'" for i in ids) + ")")
    strings = [t for t in toks if t.kind is tokens_module.T.STRING]
    assert [t.value for t in strings] == ids
    assert all(t.text == f"'{t.value}'" and t.end - t.offset == 20 for t in strings)


def test_a_long_in_list_parses_to_one_literal_per_value_at_its_offset() -> None:
    values = [f"500{i:015d}" for i in range(300)] + ["it\\'s"] + [f"a{i}" for i in range(5)]
    text = "SELECT Id FROM Case WHERE Id IN (" + ", ".join(f"'{v}'" for v in values) + ")"
    where = parse(text).where
    assert isinstance(where, ast.InList)
    expected_offsets, at = [], 0
    for v in values:
        at = text.index(f"'{v}'", at)
        expected_offsets.append(at)
        at += len(v) + 2
    got = [(lit.pos, lit.kind, lit.value, lit.text) for lit in where.values]  # type: ignore[union-attr]
    decoded = [v.replace("\\'", "'") for v in values]
    assert got == [
        (o, "string", d, f"'{v}'") for o, d, v in zip(expected_offsets, decoded, values, strict=True)
    ]


_PLAIN = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="'\\\n\r"), max_size=8)
_GAP = st.text(alphabet=" \t", max_size=3)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_PLAIN, _GAP, _GAP), min_size=1, max_size=30),
    st.text(alphabet=" \t\n", max_size=3),
    st.sampled_from(["", ") AND Status = 'x'", ",", ", 'a'x", "\n, 'b')"]),
)
def test_any_string_run_tokenizes_as_the_general_path(
    parts: list[tuple[str, str, str]], lead: str, tail: str
) -> None:
    """Runs of plain strings with any spacing around their commas (commas, spaces, tabs and any other
    character inside the strings; a line break before the list; a tail that ends or breaks the run): the
    fast path's tokens are the general path's, field by field."""
    items = "".join(
        f"{before},{after}'{value}'" if i else f"'{value}'" for i, (value, before, after) in enumerate(parts)
    )
    text = f"SELECT Id FROM Case WHERE{lead}Id IN ({items}{tail}"
    with pytest.MonkeyPatch.context() as m:
        fast, general = _both(m, tokenize, text)
    assert fast == general


_ID_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ANY_ID = st.one_of(
    st.text(alphabet=_ID_CHARS, min_size=15, max_size=15),
    st.text(alphabet=_ID_CHARS, min_size=18, max_size=18),
)


def _bound(soql: str) -> list[object]:
    """The values a compiled query binds, in order (a long IN list is one JSON array)."""
    out: list[object] = []
    for v in compile_soql(soql, load_model(), date(2024, 6, 1)).params.values():
        out += json.loads(v) if isinstance(v, str) and v.startswith("[") else [v]
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(_ANY_ID, min_size=1, max_size=12), st.sampled_from([1, 60]), st.booleans())
def test_an_id_in_list_binds_what_each_id_binds_alone(ids: list[str], repeat: int, with_null: bool) -> None:
    """`Id IN (...)` binds, per id (15 or 18 characters, in any case), what `Id = '...'` binds for it alone
    (the general path: 18 characters, case-safe suffix), short lists and long ones (over LONG_IN_LIST,
    bound as one JSON array) alike; a null in the list binds nothing."""
    many = ids * repeat
    items = ", ".join(f"'{i}'" for i in many) + (", null" if with_null else "")
    alone = [_bound(f"SELECT Id FROM Case WHERE Id = '{i}'")[0] for i in ids] * repeat
    assert _bound(f"SELECT Id FROM Case WHERE Id IN ({items})") == alone
    assert (
        _bound(f"SELECT Id FROM Case WHERE OwnerId NOT IN ({items})")
        == [_bound(f"SELECT Id FROM Case WHERE OwnerId = '{i}'")[0] for i in ids] * repeat
    )


@pytest.mark.parametrize("bad", ["500A", "500000000000000!!!", "5000000000000000000"])
def test_an_id_in_list_still_refuses_what_is_not_an_id(bad: str) -> None:
    soql = "SELECT Id FROM Case WHERE Id IN ('500000000000000AAA', '" + bad + "')"
    with pytest.raises(SoqlError, match="invalid ID field"):
        compile_soql(soql, load_model(), date(2024, 6, 1))


def _in_list_queries(org: LocalOrg) -> list[str]:
    """IN lists of every kind of value the org holds, long enough to be bound either way."""
    conn = org.store.connection()
    cases = conn.execute('SELECT "Id", "Status", "Subject", "CreatedDate" FROM "Case" LIMIT 80').fetchall()
    items = conn.execute('SELECT "UnitPrice", "Quantity" FROM "OrderItem" LIMIT 80').fetchall()

    def q(value: str) -> str:
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"

    ids = [r[0] for r in cases]
    return [
        "SELECT Id FROM Case WHERE Id IN (" + ", ".join(q(i) for i in ids) + ")",
        "SELECT Id FROM Case WHERE Id IN (" + ", ".join(q(i[:15]) for i in ids) + ")",  # 15-character ids
        "SELECT Id FROM Case WHERE Id NOT IN (" + ", ".join(q(i) for i in ids) + ", null)",
        "SELECT Id FROM Case WHERE Status IN ("  # case-insensitive text, as SOQL compares
        + ", ".join(q(s.upper() if n % 2 else s.lower()) for n, (_, s, _, _) in enumerate(cases))
        + ")",
        "SELECT Id FROM Case WHERE Subject IN (" + ", ".join(q(r[2] or "") for r in cases) + ")",
        "SELECT Id FROM Case WHERE OwnerId NOT IN (" + ", ".join(q(i) for i in ids) + ")",
        "SELECT Id FROM OrderItem WHERE UnitPrice IN (" + ", ".join(str(r[0]) for r in items) + ")",
        "SELECT Id FROM OrderItem WHERE Quantity IN (" + ", ".join(str(r[1]) for r in items) + ")",
        "SELECT Id FROM Case WHERE CreatedDate IN (" + ", ".join(str(r[3])[:19] + "Z" for r in cases) + ")",
    ]


def test_an_in_list_gives_the_same_rows_bound_as_parameters_or_as_one_json_array(
    default_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long IN lists are bound as one JSON array (json_each), short ones as one parameter per value: the
    rows are the same either way, for ids (15 or 18 characters), text compared without case, numbers and
    datetimes, with IN and NOT IN."""
    from orgs.local.soql import filters

    org = LocalOrg(default_bundle)
    try:
        for soql in _in_list_queries(org):
            out = []
            for limit in (10**9, 0):  # every list as parameters, then every list as a JSON array
                monkeypatch.setattr(filters, "LONG_IN_LIST", limit)
                plan = compile_soql(soql, org.model, org.today)
                assert ("json_each" in plan.sql) == (limit == 0)
                out.append(org.execute(plan.sql, plan.params))
            assert out[0] == out[1], soql
            assert out[0] or "NOT IN" not in soql  # NOT IN of 80 ids leaves rows
    finally:
        org.close()


_CONTEXTS = [
    "SELECT Id FROM Case WHERE Id IN ({run})",
    "SELECT Id FROM Case WHERE Id NOT IN ({run}, 1, null) AND Status = 'New'",
    "SELECT Id FROM Case WHERE OwnerId IN ({run}) OR Id IN ({run})",
    "SELECT Id FROM Case WHERE ({run})",  # a run where a condition belongs: the error names its first string
    "SELECT Id FROM Case WHERE Id IN ({run}",  # never closed
    "SELECT Id FROM Case WHERE Id IN ({run}) x",
    "SELECT Id FROM Case WHERE Id IN (SELECT {run})",
    "SELECT COUNT({run}) FROM Case",
    "SELECT Id FROM Case WHERE Type INCLUDES ({run})",
    "SELECT Id FROM Case WHERE Id IN (\n{run})",
    "SELECT Id FROM Case WHERE Id IN ('a', {run})",  # the run does not follow `(`: read as tokens
]


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(_CONTEXTS),
    st.lists(st.tuples(_PLAIN, _GAP, _GAP), min_size=2, max_size=12),
    st.booleans(),
)
def test_a_string_run_read_whole_parses_as_the_general_path(
    context: str, parts: list[tuple[str, str, str]], too_long: bool
) -> None:
    """The parser reads a run of plain strings after `(` as one RUN token (`tokenize_compact`) and turns
    it into Literals itself, or splits it into tokens wherever else it meets it: the tree, or the error,
    is the general path's (every string read as its own token), in any context, with any spacing, with a
    string too long for a WHERE clause."""
    from orgs.local.soql.limits import MAX_STRING_CHARS

    if too_long:
        parts = [*parts[:1], ("z" * (MAX_STRING_CHARS + 1), "", " "), *parts[1:]]
    run = "".join(
        f"{before},{after}'{value}'" if i else f"'{value}'" for i, (value, before, after) in enumerate(parts)
    )
    text = context.replace("{run}", run)
    with pytest.MonkeyPatch.context() as m:
        fast, general = _both(m, parse, text)
    assert repr(fast) == repr(general)
