"""Salesforce-style ids. Goldens are real ids from CRMArena's org (crmarena.md), so the case-safe suffix
algorithm is checked against Salesforce itself, not against this code."""

from __future__ import annotations

import pytest

from generator.ids import base62, checksum_suffix, is_valid_id, make_id, make_ids, object_offset, to18

REAL_IDS = [
    "005Ws000001xYl3IAE", "005Ws000001xSR9IAM", "005Ws000001xZvdIAE", "005Ws000001xatJIAQ",
    "500Ws000007qnYaIAI", "500Ws000007rRKgIAM", "01tWs000002wTWjIAM", "01tWs000002wR9zIAE",
    "a1MWs0000012u7BMAQ", "a1MWs0000012tz7MAA", "a1MWs0000012u0jMAA", "ka0Ws000000QriDIAS", "ka0Ws000000QrofIAC",
]  # fmt: skip


@pytest.mark.parametrize("real", REAL_IDS)
def test_suffix_matches_real_salesforce_ids(real: str) -> None:
    assert checksum_suffix(real[:15]) == real[15:]
    assert to18(real[:15]) == real
    assert is_valid_id(real, real[:3])


def test_vectorised_ids_equal_the_scalar_definition() -> None:
    ids = make_ids("802", 1000, 5000)
    scalar = [to18("802Ws0" + base62(object_offset("802") + 1000 + i, 9)) for i in range(5000)]
    assert list(ids) == scalar
    assert len(set(ids)) == 5000
    assert all(is_valid_id(i, "802") for i in ids)


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 16])
def test_ids_made_a_chunk_at_a_time_are_the_scalar_definition(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Ids are made ID_CHUNK at a time (a bound on the temporaries): across every chunk boundary they are still
    the scalar definition, in order."""
    from generator import ids

    monkeypatch.setattr(ids, "ID_CHUNK", chunk)
    made = make_ids("a1M", 61, 300)
    assert made.dtype == object and len(made) == 300
    assert list(made) == [to18("a1MWs0" + base62(object_offset("a1M") + 61 + i, 9)) for i in range(300)]
    assert len(make_ids("a1M", 0, 0)) == 0


def test_ids_look_like_the_org() -> None:
    one = make_id("500", 0)
    assert len(one) == 18 and one.startswith("500Ws0")


def test_invalid_ids_are_rejected() -> None:
    good = make_id("003", 7)
    assert not is_valid_id(good[:15] + "AAA", "003")  # wrong suffix
    assert not is_valid_id(good, "001")  # wrong prefix
    assert not is_valid_id(good[:17], None)
    assert not is_valid_id(good[:14] + "!" + good[15:], None)
