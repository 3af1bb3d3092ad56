"""The profile's [bounds] table: loaded as data, and every malformed entry fails with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.errors import ProfileError
from schemas.profile import load_profile
from tests.conftest import FIXTURES, SMALL_PROFILE

BAD = sorted((FIXTURES / "profiles" / "bad_bounds").glob("*.toml"))


def test_crmarena_bounds_load_as_declared() -> None:
    bounds = load_profile("crmarena").bounds
    assert bounds["OrderItem"]["OrderId"] == (1, 25)
    assert bounds["Contact"]["AccountId"] == (1, 1)
    assert bounds["CaseHistory__c"]["CaseId__c"] == (2, 6)


def test_a_child_profile_inherits_and_overrides_bounds(tmp_path: Path) -> None:
    child = tmp_path / "child.toml"
    child.write_text(
        f'[profile]\nname = "child"\nextends = "{SMALL_PROFILE}"\n\n[bounds.OrderItem]\nOrderId = [2, 3]\n'
    )
    bounds = load_profile(str(child)).bounds
    assert bounds["OrderItem"]["OrderId"] == (2, 3)
    assert bounds["EmailMessage"]["ParentId"] == load_profile("crmarena").bounds["EmailMessage"]["ParentId"]


def test_every_bad_bounds_fixture_is_listed() -> None:
    assert len(BAD) >= 7


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_bounds_fail_with_file_and_line(path: Path) -> None:
    expected = path.read_text().splitlines()[0].removeprefix("# expect: ")
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    assert expected in str(info.value)
    assert info.value.fields["line"] == int(expected.split(":")[1])
