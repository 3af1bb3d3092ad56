"""Profiles: the crmarena profile, scaling, inheritance, and a corpus of bad profiles with located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.errors import ProfileError
from schemas.profile import PROFILE_DIR, load_profile
from tests.conftest import SMALL_PROFILE

PAPER_COUNTS = {
    "User": 100, "Contact": 196, "ProductCategory": 12, "Product2": 500, "Pricebook2": 44, "PricebookEntry": 22000,
    "Order": 2071, "OrderItem": 7100, "Case": 977, "EmailMessage": 3234, "LiveChatTranscript": 387,
    "Knowledge__kav": 45,
}  # fmt: skip


def test_crmarena_profile_has_the_paper_counts() -> None:
    p = load_profile("crmarena")
    for name, count in PAPER_COUNTS.items():
        assert p.counts[name] == count
    assert 10 <= p.counts["Issue__c"] <= 15
    assert p.counts["Account"] == p.counts["Contact"]
    assert p.span.start.isoformat() == "2019-06-01" and p.span.end.isoformat() == "2024-05-31"
    assert p.company.name == "Shoes & Clothings"


def test_scale_multiplies_volume_objects_only() -> None:
    p = load_profile("crmarena")
    at10 = p.counts_at(10)
    assert at10["Case"] == 9770 and at10["Order"] == 20710 and at10["EmailMessage"] == 32340
    assert at10["Product2"] == 500 and at10["PricebookEntry"] == 22000 and at10["Knowledge__kav"] == 45
    assert at10["User"] == round(100 * 10**0.5)
    assert p.counts_at(0.01)["Case"] == 10


def test_extends_merges_tables_and_keeps_base_latent() -> None:
    small = load_profile(str(SMALL_PROFILE))
    base = load_profile("crmarena")
    assert small.name == "small" and small.counts["Product2"] == 60
    assert small.latent["agents"] == base.latent["agents"]
    assert small.scaling == base.scaling
    assert small.digest != base.digest


def _write(tmp_path: Path, text: str, name: str = "bad.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


BASE = (PROFILE_DIR / "crmarena.toml").read_text()


def _replace(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if needle in line)


# (profile text, text that marks the offending line (or None), message fragment)
BAD = [
    ("negative count", _replace("Case = 977", "Case = -5"), "Case = -5", "less than the minimum of 0"),
    ("non-numeric count", _replace("Case = 977", 'Case = "many"'), 'Case = "many"', "is not of type 'integer'"),
    ("fractional count", _replace("Case = 977", "Case = 97.5"), "Case = 97.5", "is not of type 'integer'"),
    ("unknown object", _replace("Issue__c = 12\n", "Issue__c = 12\nTicket = 4\n"), "Ticket = 4", "unknown object"),
    ("unknown field", _replace("[picklists.Case.Origin]", "[picklists.Case.Channel]"), "[picklists.Case.Channel]",
     "`Case` has no field `Channel`"),
    ("bad picklist value", _replace("Phone = 0.25", "Fax = 0.25"), "Fax = 0.25", "`Fax` is not a value of Case.Origin"),
    ("not a picklist", _replace("[picklists.Case.Origin]", "[picklists.Case.Subject]"), "[picklists.Case.Subject]",
     "not a picklist"),
    ("unknown key", _replace("[latent.agents]\n", "[latent.agents]\nskil_alpha = 2\n"), "skil_alpha = 2", "unknown key"),
    ("derived count", _replace("Issue__c = 12\n", "Issue__c = 12\nCaseHistory__c = 5\n"), "CaseHistory__c = 5", "derived"),
    ("unknown remedy", _replace("remedies = { cancellation = 1 }", "remedies = { cancelation = 1 }"),
     "cancelation = 1", "Did you mean `cancellation`"),
    ("end before start", _replace("end = 2024-05-31", "end = 2019-05-31"), "end = 2019-05-31", "must be after"),
    ("inconsistent entries", _replace("PricebookEntry = 22000", "PricebookEntry = 30000"), "PricebookEntry = 30000",
     "between 500"),
    ("unknown category", BASE.replace('latent.categories."Accessories"', 'latent.categories."Skiing"'),
     '[latent.categories."Skiing"]', "not a value of Product2.Family"),
    ("bad task style", _replace('style = "crmarena"', 'style = "verbose"'), 'style = "verbose"',
     "is not one of ['crmarena', 'explicit']"),
    ("weights reversed", _replace("grams = [4000, 24000]", "grams = [24000, 4000]"), "grams = [24000, 4000]",
     "the lightest weight must come first"),
    ("one feature", _replace('features = ["a wide smooth handle", "a flat base", "colour-coded weight markings"]',
                              'features = ["a flat base"]'), 'features = ["a flat base"]', "is too short"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "text", "marker", "fragment"), BAD, ids=[b[0] for b in BAD])
def test_bad_profile_is_located(tmp_path: Path, label: str, text: str, marker: str, fragment: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    message = str(err.value)
    assert fragment in message
    assert f"{path}:{_line_of(text, marker)}" in message


def test_malformed_toml_names_line_and_column(tmp_path: Path) -> None:
    text = _replace("Case = 977", "Case = = 977")
    path = _write(tmp_path, text)
    with pytest.raises(ProfileError, match=rf"{path}:{_line_of(text, 'Case = = 977')}:\d+: malformed TOML"):
        load_profile(path)


def test_unknown_profile_suggests(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"Unknown profile `crmarna`\. Did you mean `crmarena`"):
        load_profile("crmarna")


def test_errors_in_a_child_profile_point_at_the_child(tmp_path: Path) -> None:
    text = '[profile]\nname = "kid"\nextends = "crmarena"\n\n[counts]\nCase = -1\n'
    path = _write(tmp_path, text)
    with pytest.raises(ProfileError, match=rf"{path}:6: `counts.Case`"):
        load_profile(path)


def test_extends_cycle_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, '[profile]\nname = "a"\nextends = "b.toml"\n', "a.toml")
    _write(tmp_path, '[profile]\nname = "b"\nextends = "a.toml"\n', "b.toml")
    with pytest.raises(ProfileError, match="forms a cycle"):
        load_profile(str(tmp_path / "a.toml"))
