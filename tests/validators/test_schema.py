"""schema.py: typed records, orgseed's formats, and the fast path agreeing with jsonschema.

The reference is `jsonschema` itself (Draft 2020-12 with orgseed's FormatChecker) run on every typed record;
the vectorised path must report exactly the same findings, message for message, on a sample holding every
kind of violation the object schemas can express, and on a synthetic object using keywords the fast path
does not compile (so it must fall back to jsonschema).
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from schemas.formats import EMAIL_RE, SF_DATETIME_RE
from schemas.model import ObjectSpec, parse_object
from validators.findings import Finding
from validators.load import BundleData
from validators.schema import (
    NUMBER_RE,
    _all_match,
    _fixed_width,
    _fullmatch,
    check_object,
    check_object_jsonschema,
    convert_cell,
    format_checker,
)

VALID_ID = "001Ws00001sslFpIAI"  # an Account id from a real build: suffix IAI


def bad_values(prop: dict[str, Any]) -> list[str | None]:
    """Values that break (or probe the edges of) a property's JSON Schema, as CSV cells would hold them."""
    values: list[str | None] = [
        None,
        " ",
        "abc",
        "1.5",
        "-1",
        "0",
        "1e999",
        "1E2",
        "007",
        "NaN",
        "true",
        "yes",
        "1\n",
        "2020-02-30",
        "2021-03-04",
        "2020-01-01T25:00:00.000+0000",
        "2020-01-01T00:00:00.000+0100",
        "2020-01-01T00:00:00.000+0000\n",
        "2020-01-01 00:00:00",
        "no-at-sign",
        "a@b",
        "x y@example.com",
        "someone@example.com",
        VALID_ID,
        VALID_ID[:-1] + "A",  # wrong case-safe suffix
        VALID_ID.lower(),
        VALID_ID + "\n",
        "003" + VALID_ID[3:],  # another object's prefix (suffix still right)
        VALID_ID[:15],  # a 15-character id
    ]
    for value in prop.get("enum", []):
        if isinstance(value, str):
            values += [value, value.lower(), value + " "]
    pattern = prop.get("pattern", "")
    if pattern.startswith("^") and pattern[1:4].isalnum():
        values.append(pattern[1:4] + VALID_ID[3:])  # the right prefix with a valid suffix
    if "maxLength" in prop:
        values += ["x" * prop["maxLength"], "x" * (prop["maxLength"] + 1)]
    return values


def violation_sample(spec: ObjectSpec, raw: pd.DataFrame) -> pd.DataFrame:
    """Real rows, then for every field one row per bad value (other cells copied from a real row)."""
    base = raw.head(15).copy()
    template = raw.iloc[0].to_dict()
    rows = []
    for f in spec.fields:
        for value in bad_values(f.json_schema):
            row = dict(template)
            row[f.name] = value
            rows.append(row)
    sample = pd.concat([base, pd.DataFrame(rows, columns=raw.columns, dtype=object)], ignore_index=True)
    sample = sample.astype(object).where(sample.notna(), None)
    sample["_line"] = range(2, len(sample) + 2)
    return sample


def key(f: Finding) -> str:
    return json.dumps(f.to_json(), sort_keys=True)


def test_fast_path_matches_jsonschema_on_every_object(small_data: BundleData) -> None:
    rules: Counter[str] = Counter()
    for spec in small_data.model:
        sample = violation_sample(spec, small_data.raw[spec.name])
        fast = sorted(map(key, check_object(spec, sample, small_data.model)))
        slow = sorted(map(key, check_object_jsonschema(spec, sample, small_data.model)))
        assert fast == slow, spec.name
        rules.update(f.rule for f in check_object(spec, sample, small_data.model))
    # The sample holds every kind of violation the shipped schemas can express.
    for rule in ("required", "type", "picklist", "pattern", "format", "max-length", "minimum"):
        assert rules[f"schema.{rule}"] > 0, rule


def test_real_records_have_no_schema_findings(small_data: BundleData) -> None:
    for spec in small_data.model:
        assert check_object(spec, small_data.raw[spec.name], small_data.model) == []


SYNTHETIC = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Widget__c",
    "type": "object",
    "minProperties": 1,
    "x-sf": {
        "name": "Widget__c",
        "label": "Widget",
        "labelPlural": "Widgets",
        "keyPrefix": "a9Z",
        "custom": True,
        "description": "A synthetic object using keywords the shipped schemas do not.",
        "externalIdField": "Orgseed_Id__c",
    },
    "properties": {
        "Id": {
            "type": "string",
            "format": "sf-id",
            "x-sf": {"type": "id", "label": "Id", "description": "Id"},
        },
        "Code__c": {
            "type": ["string", "null"],
            "minLength": 3,
            "maxLength": 5,
            "x-sf": {"type": "string", "label": "Code", "description": "Code", "length": 5},
        },
        "Size__c": {
            "type": ["number", "null"],
            "exclusiveMinimum": 0,
            "maximum": 10,
            "x-sf": {"type": "double", "label": "Size", "description": "Size"},
        },
        "Count__c": {
            "type": ["integer", "null"],
            "minimum": 1,
            "exclusiveMaximum": 100,
            "multipleOf": 5,
            "x-sf": {"type": "int", "label": "Count", "description": "Count"},
        },
        "Flag__c": {"type": "boolean", "x-sf": {"type": "boolean", "label": "Flag", "description": "Flag"}},
    },
    "required": ["Id", "Flag__c"],
    "additionalProperties": False,
}


def synthetic_spec(schema: dict[str, Any]) -> ObjectSpec:
    return parse_object(Path("Widget__c.json"), schema)


@pytest.mark.parametrize("object_keyword", [True, False], ids=["object-fallback", "property-fallback"])
def test_fast_path_matches_jsonschema_on_other_keywords(object_keyword: bool) -> None:
    schema = json.loads(json.dumps(SYNTHETIC))
    if not object_keyword:
        del schema["minProperties"]
    spec = synthetic_spec(schema)
    cells = [
        "ab",
        "abc",
        "abcdef",
        "0",
        "0.5",
        "10",
        "10.5",
        "1",
        "5",
        "7",
        "100",
        "95",
        "true",
        "false",
        "x",
        None,
    ]
    rows = [
        {
            "Id": VALID_ID if i % 2 else VALID_ID[:-1] + "Z",
            **{f: cell for f in ("Code__c", "Size__c", "Count__c", "Flag__c")},
        }
        for i, cell in enumerate(cells)
    ]
    raw = pd.DataFrame(rows, dtype=object).astype(object)
    raw = raw.where(raw.notna(), None)
    raw["_line"] = range(2, len(raw) + 2)
    fast = check_object(spec, raw)
    slow = check_object_jsonschema(spec, raw)
    assert sorted(map(key, fast)) == sorted(map(key, slow))
    rules = {f.rule for f in fast}
    assert {
        "schema.min-length",
        "schema.max-length",
        "schema.minimum",
        "schema.maximum",
        "schema.constraint",
    } <= rules
    assert {"schema.format", "schema.type", "schema.required"} <= rules


@pytest.mark.parametrize(
    ("cell", "types", "expected"),
    [
        (None, {"string"}, None),
        ("true", {"boolean"}, True),
        ("false", {"boolean", "null"}, False),
        ("True", {"boolean"}, "True"),
        ("true", {"string"}, "true"),
        ("5", {"integer"}, 5),
        ("-5", {"number"}, -5),
        ("1.50", {"number"}, 1.5),
        ("1E2", {"number"}, 100.0),
        ("1e999", {"number"}, "1e999"),
        ("007", {"number"}, "007"),
        ("NaN", {"number"}, "NaN"),
        (" 5", {"integer"}, " 5"),
        ("5\n", {"integer"}, "5\n"),
        ("12", {"string"}, "12"),
    ],
)
def test_typed_cell_conversion(cell: str | None, types: set[str], expected: Any) -> None:
    value = convert_cell(cell, frozenset(types))
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("fmt", "value", "ok"),
    [
        ("sf-id", "001Ws00001sslFpIAI", True),
        ("sf-id", "001Ws00001sslFpIAA", False),
        ("sf-id", "001Ws00001sslFp", False),
        ("sf-id", "001ws00001sslfpiai", False),
        ("sf-datetime", "2024-05-31T23:59:59.000+0000", True),
        ("sf-datetime", "2024-02-30T00:00:00.000+0000", False),
        ("sf-datetime", "2024-05-31T23:59:59Z", False),
        ("sf-datetime", "2024-05-31T23:59:59.000+0000\n", False),
        ("date", "2024-02-29", True),
        ("date", "2023-02-29", False),
        ("email", "jane.doe+tag@example.co.uk", True),
        ("email", "jane@localhost", False),
        ("email", "Jane <jane@example.com>", False),
    ],
)
def test_format_checker_knows_orgseed_formats(fmt: str, value: str, ok: bool) -> None:
    assert format_checker().conforms(value, fmt) is ok
    assert format_checker().conforms(12, fmt)  # formats apply to strings only


@pytest.mark.parametrize(
    "pattern",
    [
        r"005[0-9A-Za-z]{15}",
        SF_DATETIME_RE.pattern,
        EMAIL_RE.pattern,
        NUMBER_RE.pattern,
        r"[^,]+",  # can match a line break: a match spilling into the next cell must not count
        r"a|ab",
        r"a*",  # matches the empty cell too: the counted matches include empty ones
    ],
)
def test_column_fullmatch_agrees_with_matching_each_cell(pattern: str) -> None:
    rnd = random.Random(pattern)
    good = {
        r"005[0-9A-Za-z]{15}": lambda: "005" + "".join(rnd.choice("aZ09") for _ in range(15)),
        SF_DATETIME_RE.pattern: lambda: (
            f"20{rnd.randrange(10, 30)}-01-0{rnd.randrange(1, 9)}T10:00:00.000+0000"
        ),
        EMAIL_RE.pattern: lambda: f"user{rnd.randrange(99)}@example.com",
        NUMBER_RE.pattern: lambda: str(rnd.choice([0, 12, -3, 4.5, 1e20])),
        r"[^,]+": lambda: "abc",
        r"a|ab": lambda: rnd.choice(["a", "ab"]),
        r"a*": lambda: "a" * rnd.randrange(3),
    }[pattern]
    bad = ["", "x", "005short", "1,2", "line\nbreak", "ab ", " a", "a\n", "00512345678901234567", "1e", "--1"]
    for trial in range(60):
        cells: list[str | None] = [good() for _ in range(rnd.randrange(0, 30))]
        if trial % 3:  # two trials in three hold a cell that does not match, an empty cell or a line break
            cells.insert(rnd.randrange(len(cells) + 1), rnd.choice([*bad, None]))
        want = [isinstance(c, str) and re.fullmatch(pattern, c) is not None for c in cells]
        got = _fullmatch(pd.Series(cells, dtype=object), pattern).tolist()
        assert got == want, cells


@pytest.mark.parametrize(
    ("pattern", "fixed"),
    [
        (r"a[0-9b-d]", True),
        (r"^\d-\+$", True),
        (r"(\d):[]x]", False),  # a class opening with `]`: not parsed, left to the regex
        (r"(\d):[x\]]", True),
        (r"(?:[\s]a)\.", True),
        (r"(?:[\s]a){1}\.", False),  # a repeated group: left to the regex
        (r"[a-c]{2}", True),
        (r"[^a]b", False),
        (r"(ab){2}", False),
        (r"a{0}b", False),
        (r"a\b", False),
        (r"a|b", False),
        (r"a.", False),
        (r"a+", False),
        (r"(?i:a)b", False),
    ],
)
def test_all_match_of_fixed_width_patterns(pattern: str, fixed: bool) -> None:
    """The columns of a fixed-width pattern are checked byte column by byte column (`_fixed_width`), other
    patterns by the regex: either way True exactly when there are cells (strings: the callers pass the present
    ones), all matching whole."""
    assert (_fixed_width(pattern) is not None) == fixed
    alphabet = ["a", "b", "c", "d", "x", "z", "0", "9", "-", "+", ".", ":", "]", " ", "\n", "\r", "é", "ab"]
    universe = ["".join(t) for n in range(4) for t in itertools.product(alphabet, repeat=n)]
    matching = [u for u in universe if re.fullmatch(pattern, u) and "\n" not in u]
    assert matching
    rnd = random.Random(pattern)
    for trial in range(300):
        cells = rnd.choices(matching, k=rnd.randrange(0, 6))
        if trial % 2:  # one trial in two holds another cell, matching or not (empty, a line break, ...)
            cells.insert(rnd.randrange(len(cells) + 1), rnd.choice(universe))
        want = bool(cells) and all("\n" not in c and re.fullmatch(pattern, c) for c in cells)
        assert _all_match(pd.Series(cells, dtype=object), pattern) == want, cells
