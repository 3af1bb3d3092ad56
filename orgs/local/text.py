"""How the local org splits text into search tokens (SOSL), shared by the index and the queries.

Salesforce's search splits text on spaces and punctuation and where letters and digits meet ("SC-OXX-1"
→ sc, oxx, 1; "abc123" → abc, 123), case-insensitively. SQLite's FTS5 `unicode61` tokenizer splits on
everything that is not a letter or digit and folds case and diacritics; inserting a space where a letter
meets a digit before indexing (and before matching) gives Salesforce's tokens.
"""

from __future__ import annotations

import re

_DIGIT = re.compile(r"\d")
_LETTER_DIGIT = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")
TOKEN_RE = re.compile(r"[^\W_]+")
FTS_TOKENIZER = "unicode61 remove_diacritics 2"


def search_text(value: str | None) -> str | None:
    """`value` prepared for the full-text index (letter/digit boundaries become spaces)."""
    if value is None:
        return None
    if _DIGIT.search(value) is None:  # no digit, no boundary (a quick look: most texts have none)
        return value
    return _LETTER_DIGIT.sub(" ", value)


def search_tokens(value: str) -> list[str]:
    """The lower-case tokens of `value`, as the index sees them."""
    return [t.lower() for t in TOKEN_RE.findall(_LETTER_DIGIT.sub(" ", value))]
