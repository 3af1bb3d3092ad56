"""Seed derivation. One run seed; every component derives its own generator from (seed, *names).

Derivation hashes the parts with BLAKE2b, so the stream of one component never depends on how many
other components, shards or workers exist.
"""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(seed: int, *parts: object) -> int:
    h = hashlib.blake2b(digest_size=8)
    h.update(str(int(seed)).encode())
    for part in parts:
        h.update(b"\x1f")
        h.update(str(part).encode())
    return int.from_bytes(h.digest(), "big")


def np_rng(seed: int, *parts: object) -> np.random.Generator:
    return np.random.default_rng(derive_seed(seed, *parts))
