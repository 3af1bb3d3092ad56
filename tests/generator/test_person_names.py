"""`person_names` draws what Faker's own first_name()/last_name() calls draw, and leaves the same state."""

from __future__ import annotations

from faker import Faker
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.objects.people import numerify, person_names, street_addresses


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


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=2**63 - 1), st.integers(min_value=0, max_value=200))
def test_street_addresses_and_phones_are_fakers(seed: int, n: int) -> None:
    """`street_addresses` and `numerify` give what Faker's street_address() and numerify() calls give (every
    pattern: with and without a secondary address, first- and last-name streets), and the same next draw."""
    one_by_one, at_once = Faker("en_US"), Faker("en_US")
    one_by_one.seed_instance(seed)
    at_once.seed_instance(seed)
    expected = [one_by_one.numerify("(###) ###-####") for _ in range(n)]
    expected += [one_by_one.street_address() for _ in range(n)]
    got = [numerify(at_once.random, "(###) ###-####") for _ in range(n)] + street_addresses(at_once, n)
    assert got == expected
    assert at_once.zipcode() == one_by_one.zipcode()
    if n >= 50:  # with this many, both address patterns and both street-name patterns occur
        assert any(" Apt. " in a or " Suite " in a for a in got[n:])
        assert any(not (" Apt. " in a or " Suite " in a) for a in got[n:])
