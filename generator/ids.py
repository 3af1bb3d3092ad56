"""Salesforce-style record ids.

An 18-character id is a 15-character case-sensitive id plus a 3-character case-safe suffix:
`<key prefix:3><pod:2><reserved:1><record number:9 base-62>` + suffix. The suffix encodes, for each of the
three 5-character chunks, which characters are upper-case letters (bit i set when char i is A–Z), as one
character of `A..Z0..5`. orgseed ids use the pod `Ws` (as CRMArena's org did) and a per-object offset so
that ids look like those of a real org.
"""

from __future__ import annotations

import numpy as np

from schemas.formats import sf_id_suffix

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
SUFFIX_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
POD = "Ws"
_BASE62_INDEX = {c: i for i, c in enumerate(BASE62)}


def checksum_suffix(id15: str) -> str:
    """The 3-character case-safe suffix of a 15-character id (defined once, in schemas/formats.py)."""
    if len(id15) != 15:
        raise ValueError(f"expected a 15-character id, got {id15!r}")
    return sf_id_suffix(id15)


def to18(id15: str) -> str:
    return id15 + checksum_suffix(id15)


def is_valid_id(value: str, key_prefix: str | None = None) -> bool:
    """True for a well-formed 18-character id (right suffix, and prefix when given)."""
    if not isinstance(value, str) or len(value) != 18:
        return False
    if any(c not in _BASE62_INDEX for c in value[:15]):
        return False
    if key_prefix is not None and not value.startswith(key_prefix):
        return False
    return checksum_suffix(value[:15]) == value[15:]


def base62(n: int, width: int) -> str:
    if n < 0:
        raise ValueError("negative record number")
    digits = []
    while n:
        n, r = divmod(n, 62)
        digits.append(BASE62[r])
    text = "".join(reversed(digits)) or "0"
    if len(text) > width:
        raise ValueError(f"record number does not fit in {width} base-62 digits")
    return text.rjust(width, "0")


def object_offset(key_prefix: str) -> int:
    """A stable per-object start number, so ids of different objects don't all start at 000…1."""
    h = 0
    for ch in key_prefix:
        h = (h * 131 + ord(ch)) % 1_000_003
    return 62**5 + h * 977


_BASE62_BYTES = np.frombuffer(BASE62.encode(), dtype=np.uint8)
_SUFFIX_BYTES = np.frombuffer(SUFFIX_ALPHABET.encode(), dtype=np.uint8)


# ids made at a time: the vectorised steps' temporaries (a 72-byte fixed-width copy of each id, 40 bytes of
# weighted case bits) are held for this many rows, not for every row at once (OrderItem at scale 1,000: 7.1 M)
ID_CHUNK = 1 << 16


def make_ids(key_prefix: str, start: int, count: int) -> np.ndarray:
    """`count` consecutive 18-character ids for records numbered start, start+1, ... (vectorised, ID_CHUNK
    at a time)."""
    head = f"{key_prefix}{POD}0".encode()
    if len(head) != 6:
        raise ValueError(f"key prefix must have 3 characters, got {key_prefix!r}")
    first = object_offset(key_prefix) + start
    if count and first + count - 1 >= 62**9:
        raise ValueError("record number does not fit in 9 base-62 digits")
    out = np.empty(count, dtype=object)
    for lo in range(0, count, ID_CHUNK):
        hi = min(count, lo + ID_CHUNK)
        out[lo:hi] = _id_chunk(head, np.arange(first + lo, first + hi, dtype=np.int64))
    return out


def _id_chunk(head: bytes, numbers: np.ndarray) -> np.ndarray:
    """The ids of record numbers `numbers` (`make_ids`' step for a chunk), as str objects."""
    chars = np.empty((len(numbers), 18), dtype=np.uint8)
    chars[:, :6] = np.frombuffer(head, dtype=np.uint8)
    rest = numbers
    for i in range(14, 5, -1):
        rest, digit = np.divmod(rest, 62)
        chars[:, i] = _BASE62_BYTES[digit]
    upper = (chars[:, :15] >= ord("A")) & (chars[:, :15] <= ord("Z"))
    weights = 1 << np.arange(5)
    for chunk in range(3):
        bits = (upper[:, chunk * 5 : chunk * 5 + 5] * weights).sum(axis=1)
        chars[:, 15 + chunk] = _SUFFIX_BYTES[bits]
    return chars.view("S18").ravel().astype("U18").astype(object)


def make_id(key_prefix: str, number: int) -> str:
    return str(make_ids(key_prefix, number, 1)[0])
