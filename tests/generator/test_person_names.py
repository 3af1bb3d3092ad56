"""`person_names` draws what Faker's own first_name()/last_name() calls draw, and leaves the same state."""

from __future__ import annotations

from faker import Faker
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.objects.people import person_names


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=2**63 - 1), st.integers(min_value=0, max_value=300))
def test_person_names_are_fakers_names(seed: int, n: int) -> None:
    one_by_one, at_once = Faker("en_US"), Faker("en_US")
    one_by_one.seed_instance(seed)
    at_once.seed_instance(seed)
    expected = [one_by_one.first_name() for _ in range(n)] + [one_by_one.last_name() for _ in range(n)]
    got = person_names(at_once, "first_names", n) + person_names(at_once, "last_names", n)
    assert got == expected
    # the Random is left where Faker leaves it: what is drawn next is the same too
    assert at_once.numerify("(###) ###-####") == one_by_one.numerify("(###) ###-####")
