"""`chain_sums` (CaseGenerator's per-chain sums of log speeds) is np.add.reduce of each chain, to the last bit,
for chains of any length: the generated handle times must not move by a rounding."""

from __future__ import annotations

import numpy as np

from generator.objects.cases import chain_sums


def test_chain_sums_are_add_reduce_of_each_chain_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    values = np.log(rng.lognormal(0.0, 0.5, 300))
    chains = [[int(a) for a in rng.integers(0, 300, k)] for k in rng.integers(1, 14, 20_000)]
    expected = np.array([np.add.reduce(values[c]) for c in chains])
    got = chain_sums(values, chains)
    assert got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes()
    assert {len(c) for c in chains} >= set(range(1, 14))  # short chains and ones summed pairwise


def test_no_chains() -> None:
    assert chain_sums(np.zeros(3), []).shape == (0,)
