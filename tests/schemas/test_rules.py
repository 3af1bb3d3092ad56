"""Field rules (`x-sf.generate`): a corpus of broken rules, each refused with one located error when the model
loads, and properties of the rule parser over generated fields and values."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.errors import ModelError
from schemas.model import SCHEMA_DIR, FieldSpec, OrgModel, load_model, parse_object
from schemas.rules import Choice, Constant, cell_value, parse_rule
from tests.conftest import FIXTURES

BAD = json.loads((FIXTURES / "rules" / "bad_rules.json").read_text(encoding="utf-8"))


def test_the_corpus_covers_every_rule_kind() -> None:
    kinds = {k for case in BAD for prop in case["add"].values() for k in prop["x-sf"]["generate"]}
    assert {"constant", "choice", "faker", "sequence", "range", "reference", "copy", "nullShare"} <= kinds
    assert len({case["title"] for case in BAD}) == len(BAD)


@pytest.mark.parametrize("case", BAD, ids=[c["title"] for c in BAD])
def test_broken_rule_is_refused_with_its_location(case: dict[str, Any]) -> None:
    # The shipped model with one object schema edited; the OrgModel checks the rules that span objects.
    shipped = load_model()
    path = SCHEMA_DIR / "objects" / f"{case['object']}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["properties"].update(case["add"])
    doc["required"] += case["required"]
    with pytest.raises(ModelError) as err:
        objects = [parse_object(path, doc) if o.name == case["object"] else o for o in shipped]
        OrgModel(objects, list(shipped.external.values()), shipped.root)
    message = str(err.value)
    assert message.startswith(f"{case['object']}.json: {case['pointer']}:"), message
    assert case["hint"] in message
    assert err.value.fields["pointer"] == case["pointer"]
    assert err.value.fields["file"] == str(path)


def test_the_shipped_model_has_no_rules_and_loads_without_faker() -> None:
    # Every shipped field is produced by generator code; rules are for fields users add.
    assert [f.name for o in load_model() for f in o.rule_fields] == []


# -- properties of the parser ---------------------------------------------------------------------------------


def _text_field(length: int, nillable: bool = True) -> FieldSpec:
    schema: dict[str, Any] = {"type": ["string", "null"] if nillable else "string", "minLength": 1}
    schema["maxLength"] = length
    return FieldSpec("X__c", "string", "X", "X", nillable, length=length, json_schema=schema)


@settings(max_examples=150, deadline=None)
@given(length=st.integers(1, 40), text=st.text(max_size=60))
def test_a_text_constant_is_accepted_exactly_when_it_fits(length: int, text: str) -> None:
    f = _text_field(length)
    fits = 1 <= len(text) <= length
    try:
        rule = parse_rule(f, {"constant": text}, Path("X.json"))
    except ModelError as exc:
        assert not fits
        assert exc.fields["pointer"] == "/properties/X__c/x-sf/generate/constant"
    else:
        assert fits and rule.rule == Constant(text)


@settings(max_examples=100, deadline=None)
@given(
    weights=st.dictionaries(
        st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8),
        st.floats(0, 1000, allow_nan=False),
        min_size=1,
        max_size=6,
    )
)
def test_picklist_weights_are_kept_in_order_or_refused_when_all_zero(weights: dict[str, float]) -> None:
    values = tuple(weights)
    f = FieldSpec("P__c", "picklist", "P", "P", True, picklist=values, json_schema={"enum": [*values, None]})
    try:
        rule = parse_rule(f, {"choice": weights}, Path("X.json"))
    except ModelError as exc:
        assert sum(weights.values()) == 0
        assert "must not all be zero" in str(exc)
    else:
        assert rule.rule == Choice(values, tuple(float(w) for w in weights.values()))


@settings(max_examples=100, deadline=None)
@given(day=st.dates(min_value=date(1, 1, 1)), number=st.integers(-(10**12), 10**12))
def test_choice_keys_read_back_what_the_csv_writes(day: date, number: int) -> None:
    as_date = FieldSpec("D__c", "date", "D", "D", True)
    as_int = FieldSpec("N__c", "int", "N", "N", True)
    assert cell_value(as_date, day.isoformat()) == day
    assert cell_value(as_int, str(number)) == number
    with pytest.raises(ValueError):
        cell_value(as_int, f"{number}.5")
