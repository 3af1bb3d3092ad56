"""How the local org splits text into search tokens (SOSL), shared by the index and the queries.

Salesforce's search splits text on spaces and punctuation and where letters and digits meet ("SC-OXX-1"
→ sc, oxx, 1; "abc123" → abc, 123), case-insensitively. SQLite's FTS5 `unicode61` tokenizer splits on
everything that is not a letter or digit and folds case and diacritics; inserting a space where a letter
meets a digit before indexing (and before matching) gives Salesforce's tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

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


_SEP = "\x00"  # joins a column's ASCII texts for `search_texts`; a text holding it is done one at a time
# characters of ASCII text spaced at once by `search_texts`: its numpy work holds about six bytes per
# character, so memory stays near 6 MB whatever the size of a batch's texts
SEARCH_CHUNK_CHARS = 1 << 20


def search_texts(values: Sequence[str | None]) -> list[str | None]:
    """`[search_text(v) for v in values]`, many at once: ASCII texts are joined (about a megabyte at a
    time) and their letter/digit boundaries found by numpy over the bytes (a fifth of the per-value
    regex's CPU over a bundle's texts); other texts go through `search_text` one by one."""
    out: list[str | None] = list(values)
    chunk: list[int] = []
    size = 0
    for i, v in enumerate(out):
        if v is None:
            continue
        if not v.isascii() or _SEP in v:
            out[i] = search_text(v)
            continue
        chunk.append(i)
        size += len(v) + 1
        if size >= SEARCH_CHUNK_CHARS:
            _space_ascii(out, chunk)
            chunk, size = [], 0
    if chunk:
        _space_ascii(out, chunk)
    return out


def _space_ascii(out: list[str | None], idx: list[int]) -> None:
    """Put a space between each letter and digit that meet in the ASCII texts `out[i]`, i in `idx`."""
    joined = _SEP.join([out[i] for i in idx])  # type: ignore[misc]
    b = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    digit = (b >= 0x30) & (b <= 0x39)
    folded = b | 0x20  # A-Z -> a-z; no other byte lands in a-z
    letter = (folded >= 0x61) & (folded <= 0x7A)
    at = np.flatnonzero((letter[:-1] & digit[1:]) | (digit[:-1] & letter[1:])) + 1
    if len(at) == 0:
        return
    spaced = np.insert(b, at, 0x20).tobytes().decode("ascii")
    for i, v in zip(idx, spaced.split(_SEP), strict=True):
        out[i] = v


def search_tokens(value: str) -> list[str]:
    """The lower-case tokens of `value`, as the index sees them."""
    return [t.lower() for t in TOKEN_RE.findall(_LETTER_DIGIT.sub(" ", value))]
