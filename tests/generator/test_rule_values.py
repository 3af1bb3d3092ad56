"""The values a field rule gives, on synthetic frames large enough to measure shares: weights and null shares
hold, values depend on (seed, object, field, block) only, and the generator refuses a field that is neither
produced by code nor ruled, or both."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from generator.objects.base import BuildContext
from generator.objects.fields import BLOCK_ROWS, check_produced, rule_column
from generator.objects.orders import BuildError
from generator.pipeline import RunSpec, generation_plan, make_context
from schemas.errors import ModelError
from schemas.model import SCHEMA_DIR, FieldSpec, OrgModel, load_model, parse_object
from schemas.rules import parse_rule
from tests.conftest import SMALL_PROFILE

N = 50_000


@pytest.fixture(scope="module")
def ctx() -> BuildContext:
    return make_context(RunSpec(profile=str(SMALL_PROFILE), seed=0, scale=1.0))


def ruled(f: FieldSpec, rule: dict[str, Any]) -> FieldSpec:
    return replace(f, rule=parse_rule(f, rule, Path("Widget__c.json")))


def frame(n: int, **columns: Any) -> pd.DataFrame:
    ids = [f"a00{i:015d}" for i in range(n)]
    return pd.DataFrame({"Id": ids, **columns})


TIER = FieldSpec("Tier__c", "picklist", "Tier", "Tier", True, picklist=("Gold", "Silver", "Bronze"))


def test_choice_follows_its_weights(ctx: BuildContext) -> None:
    f = ruled(TIER, {"choice": {"Gold": 1, "Silver": 3, "Bronze": 6}})
    counts = rule_column(ctx, "Widget__c", f, frame(N)).value_counts(normalize=True)
    assert abs(counts["Gold"] - 0.1) < 0.01 and abs(counts["Silver"] - 0.3) < 0.01
    assert abs(counts["Bronze"] - 0.6) < 0.01


def test_uniform_choice_and_zero_weights(ctx: BuildContext) -> None:
    uniform = rule_column(ctx, "Widget__c", ruled(TIER, {"choice": "uniform"}), frame(N))
    assert all(abs(s - 1 / 3) < 0.01 for s in uniform.value_counts(normalize=True))
    never = rule_column(ctx, "Widget__c", ruled(TIER, {"choice": {"Gold": 0, "Silver": 1}}), frame(N))
    assert set(never) == {"Silver"}


def test_the_profile_weights_replace_the_rules(ctx: BuildContext) -> None:
    # crmarena.toml (which small.toml extends) weighs Case.Priority Low 0.3, Medium 0.5, High 0.2.
    priority = ruled(load_model().get("Case").field("Priority"), {"choice": "uniform"})
    shares = rule_column(ctx, "Case", priority, frame(N)).value_counts(normalize=True)
    assert abs(shares["Low"] - 0.3) < 0.01 and abs(shares["Medium"] - 0.5) < 0.01
    assert abs(shares["High"] - 0.2) < 0.01


def test_null_share_leaves_that_share_empty_and_keeps_the_other_values(ctx: BuildContext) -> None:
    plain = ruled(TIER, {"choice": "uniform"})
    holed = ruled(TIER, {"choice": "uniform", "nullShare": 0.25})
    full, partial = (rule_column(ctx, "Widget__c", f, frame(N)) for f in (plain, holed))
    assert abs(partial.isna().mean() - 0.25) < 0.01
    assert (partial.dropna() == full[partial.notna()]).all()


def test_values_depend_on_the_block_not_on_the_row_count_or_seed(ctx: BuildContext) -> None:
    f = ruled(TIER, {"choice": "uniform", "nullShare": 0.1})
    short = rule_column(ctx, "Widget__c", f, frame(BLOCK_ROWS + 10))
    long = rule_column(ctx, "Widget__c", f, frame(N))
    assert short.equals(long[: len(short)])
    other = make_context(RunSpec(profile=str(SMALL_PROFILE), seed=1, scale=1.0))
    assert not rule_column(other, "Widget__c", f, frame(N)).equals(long)
    renamed = ruled(replace(TIER, name="Level__c"), {"choice": "uniform", "nullShare": 0.1})
    assert not rule_column(ctx, "Widget__c", renamed, frame(N)).equals(long)


def test_ranges_include_both_ends(ctx: BuildContext) -> None:
    count = FieldSpec("Count__c", "int", "Count", "Count", True, json_schema={"type": ["integer", "null"]})
    ints = rule_column(ctx, "Widget__c", ruled(count, {"range": {"min": 1, "max": 3}}), frame(N))
    assert set(ints) == {1, 2, 3}
    when = FieldSpec("When__c", "datetime", "When", "When", True)
    stamps = rule_column(ctx, "Widget__c", ruled(when, {"range": {}}), frame(N))
    span = ctx.profile.span
    assert stamps.min() >= pd.Timestamp(span.start_dt) and stamps.max() < pd.Timestamp(span.end_dt)
    assert (stamps.max() - stamps.min()).days > span.days - 5
    price = FieldSpec(
        "Price__c", "currency", "Price", "Price", True, json_schema={"type": ["number", "null"]}
    )
    prices = rule_column(ctx, "Widget__c", ruled(price, {"range": {"min": 0.5, "max": 2}}), frame(N))
    assert prices.between(0.5, 2).all() and (prices == prices.round(2)).all()


def test_faker_text_is_cut_to_the_length_and_repeatable(ctx: BuildContext) -> None:
    short = FieldSpec("Employer__c", "string", "E", "E", True, length=8, json_schema={"maxLength": 8})
    f = ruled(short, {"faker": "company"})
    first = rule_column(ctx, "Widget__c", f, frame(1200))
    assert first.str.len().max() <= 8 and (first.str.strip() == first).all() and first.nunique() > 100
    assert first.equals(rule_column(ctx, "Widget__c", f, frame(1200)))


def test_a_required_field_a_copy_leaves_empty_is_refused(ctx: BuildContext) -> None:
    notes = FieldSpec("Note__c", "string", "Note", "Note", False, length=20)
    f = replace(notes, rule=parse_rule(notes, {"copy": "Subject"}, SCHEMA_DIR / "objects" / "Case.json"))
    with pytest.raises(
        BuildError, match=r"Case\.json: /properties/Note__c/x-sf/generate: .*2 of 3 .* a00000000000000001"
    ):
        rule_column(ctx, "Case", f, frame(3, Subject=["a", None, None]))


def test_every_field_comes_from_code_or_its_rule_not_both() -> None:
    path = SCHEMA_DIR / "objects" / "Account.json"
    doc = json.loads(path.read_text())
    doc["properties"]["Tier__c"] = {
        "type": ["string", "null"],
        "x-sf": {"type": "string", "label": "T", "description": "T", "length": 9},
    }
    spec = parse_object(path, doc)
    produced = frame(2, **{f.name: "x" for f in spec.fields if f.name not in ("Id", "Tier__c")})
    with pytest.raises(
        BuildError, match=r"Account\.json: /properties/Tier__c: no generator code .* has no rule"
    ):
        check_produced(spec, produced)
    doc["properties"]["Tier__c"]["x-sf"]["generate"] = {"constant": "Gold"}
    check_produced(parse_object(path, doc), produced)
    doc["properties"]["Phone"]["x-sf"]["generate"] = {"constant": "555"}
    with pytest.raises(
        BuildError, match=r"/properties/Phone/x-sf/generate: Account\.Phone is produced by generator code"
    ):
        check_produced(parse_object(path, doc), produced.assign(Phone="1"))


def _lookup(target: str, prefix: str, rule: dict[str, Any] | None) -> dict[str, Any]:
    xsf = {
        "type": "reference",
        "label": "L",
        "description": "L",
        "referenceTo": [target],
        "relationshipName": "L__r",
    }
    return {
        "type": ["string", "null"],
        "pattern": f"^{prefix}[0-9A-Za-z]{{15}}$",
        "x-sf": {**xsf, **({"generate": rule} if rule else {})},
    }


def _with(edits: dict[str, dict[str, Any]]) -> OrgModel:
    shipped = load_model()
    objects = []
    for o in shipped:
        if o.name in edits:
            doc = json.loads(o.path.read_text())
            doc["properties"].update(edits[o.name])
            objects.append(parse_object(o.path, doc))
        else:
            objects.append(o)
    return OrgModel(objects, list(shipped.external.values()), shipped.root)


def test_generation_defers_only_lookups_filled_by_a_rule() -> None:
    # User.Home__c → Account and Account.Agent__c → User make a cycle. With a rule on Account.Agent__c it is
    # deferred (Account is generated first and Agent__c filled once users exist); when generator code would have
    # to fill both, no order works and the model is refused.
    ruled_model = _with(
        {
            "Account": {"Agent__c": _lookup("User", "005", {"reference": "random"})},
            "User": {"Home__c": _lookup("Account", "001", {"reference": "random"})},
        }
    )
    plan = generation_plan(ruled_model)
    assert [(d.sobject, d.field, d.reason) for d in plan.deferred] == [("Account", "Agent__c", "cycle")]
    assert plan.order.index("Account") < plan.order.index("User")
    coded = _with(
        {
            "Account": {"Agent__c": _lookup("User", "005", None)},
            "User": {"Home__c": _lookup("Account", "001", None)},
        }
    )
    with pytest.raises(ModelError, match=r"cycle that cannot be generated in any order.*x-sf\.generate"):
        generation_plan(coded)
