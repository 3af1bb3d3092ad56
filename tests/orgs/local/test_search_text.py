"""The search text the full-text index holds: `search_texts` (a column at once) is `search_text` per value,
and both give Salesforce's tokens (letters and digits split apart)."""

from __future__ import annotations

from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from orgs.local.text import search_text, search_texts, search_tokens

# letters, digits and separators, ASCII and not (accented letters, Arabic-Indic digits, NUL: the join mark)
ALPHABET = st.sampled_from([*"aZq09 -_.,\x00", "é", "ß", "٣", "Ω", "€"])
VALUES = st.lists(st.none() | st.text(ALPHABET, max_size=12), max_size=8)


@given(VALUES)
def test_a_column_at_once_is_each_value_alone(values: list[str | None]) -> None:
    assert search_texts(values) == [search_text(v) for v in values]


@given(VALUES, st.integers(1, 30))
def test_chunks_of_any_size_give_the_same_texts(values: list[str | None], chunk: int) -> None:
    """The ASCII texts are spaced a chunk at a time: where the chunks end does not change a text."""
    with mock.patch("orgs.local.text.SEARCH_CHUNK_CHARS", chunk):
        assert search_texts(values) == [search_text(v) for v in values]


def test_letter_digit_boundaries_become_spaces() -> None:
    # expected by hand: a space wherever a letter meets a digit, in either order; nothing else changes
    values = ["SC-OXX-1", "abc123def", "no digits", None, "", "4K TV 55in", "été2024", "a1\x00b2"]
    assert search_texts(values) == [
        "SC-OXX-1",
        "abc 123 def",
        "no digits",
        None,
        "",
        "4 K TV 55 in",
        "été 2024",
        "a 1\x00b 2",
    ]
    assert search_tokens("abc123def SC-OXX-1") == ["abc", "123", "def", "sc", "oxx", "1"]
