"""What generation does to each object's blocks and rows without changing a value (generator/objects/base.py):
repeated strings held once (`share_repeated_strings`), a sort skipped when the rows are already in its order
(`in_order`), and texts held as tuples until they are put in their fields (`held_texts`, `apply_text`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.objects import GENERATORS
from generator.objects.base import in_order, share_repeated_strings
from generator.text.base import LANDS_IN

# (no empty or one-character string: CPython holds one object for each of those)
WORDS = ["Closed", "New", "Working", "Escalated", "Résolu", "в работе"]


def fresh(value: str | None) -> str | None:
    """`value` as a new str object (as a NumPy string array makes one per row), never an interned one."""
    return None if value is None else "".join(list(value + "x"))[:-1]


def objects(series: pd.Series) -> list[Any]:
    return list(np.asarray(series.array, dtype=object))


column = st.lists(st.one_of(st.none(), st.sampled_from(WORDS)), min_size=0, max_size=200)


@settings(max_examples=80, deadline=None)
@given(a=column, b=st.data())
def test_repeated_strings_are_held_once_and_nothing_else_changes(
    a: list[str | None], b: st.DataObject
) -> None:
    n = len(a)
    ids = b.draw(st.lists(st.text(min_size=1, max_size=8), min_size=n, max_size=n, unique=True))
    frame = pd.DataFrame(
        {
            "status": pd.Series([fresh(v) for v in a], dtype="str"),
            "n": np.arange(n),
            "id": pd.Series([fresh(v) for v in ids], dtype="str"),
        }
    )
    before = frame.copy(deep=True)
    out = share_repeated_strings(frame)
    pd.testing.assert_frame_equal(out, before)  # values, NA, dtypes and column order
    assert list(out.columns) == ["status", "n", "id"]
    held = [v for v in objects(out["status"]) if isinstance(v, str)]
    # derived from the values: one object per distinct string when the first 64 rows repeat one
    head = [v for v in a[:64] if v is not None]
    if len(set(head)) < len(head):
        assert len({id(v) for v in held}) == len(set(held))
    else:
        assert len({id(v) for v in held}) == len(held)  # left as it was
    assert len({id(v) for v in objects(out["id"])}) == n  # distinct values: nothing to share


def test_a_column_that_already_shares_its_strings_is_left_alone() -> None:
    shared = np.array(["Activated", "Draft"], dtype=object)[np.arange(100) % 2]
    frame = pd.DataFrame({"Status": pd.Series(shared, dtype="str")})
    column = frame["Status"]
    out = share_repeated_strings(frame)
    assert out["Status"] is column or out["Status"].array is column.array


keys = st.lists(st.integers(0, 3), min_size=0, max_size=40)


@settings(max_examples=150, deadline=None)
@given(a=keys, b=st.data())
def test_rows_are_in_order_exactly_when_the_stable_sort_leaves_them_in_place(
    a: list[int], b: st.DataObject
) -> None:
    n = len(a)
    second = b.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    if b.draw(st.booleans()):  # often already in order, as OrderItem's blocks are
        pairs = sorted(zip(a, second, strict=True))
        a, second = [p[0] for p in pairs], [p[1] for p in pairs]
    dates = pd.to_datetime(np.array(a, dtype="int64"), unit="D")
    frame = pd.DataFrame({"when": dates, "k": second, "v": range(n)})
    # independent: the stable sort's own answer
    stays = frame.sort_values(["when", "k"], kind="stable").index.tolist() == list(range(n))
    assert in_order(frame, ["when", "k"]) == stays
    assert in_order(frame, ["when"]) == (
        frame.sort_values(["when"], kind="stable").index.tolist() == list(range(n))
    )


def test_a_missing_key_value_is_never_taken_for_in_order() -> None:
    frame = pd.DataFrame({"when": pd.to_datetime(["2024-01-02", None, "2024-01-03"])})
    assert not in_order(frame, ["when"])
    frame = pd.DataFrame({"k": [1.0, 2.0, np.nan]})
    assert not in_order(frame, ["k"])  # a sort would keep this order, but the check refuses missing values


def test_held_texts_land_in_their_fields() -> None:
    """For every generator that holds its texts by `LANDS_IN` (the default): `apply_text` puts each result's
    values in their fields, as the writer returned them."""
    checked = 0
    for name, gen in GENERATORS.items():
        kind = gen.text_kind
        if kind is None or kind not in LANDS_IN or gen.spills_texts:
            continue
        lands = LANDS_IN[kind]
        results = [{key: f"{name} {key} {i}" for key in lands} for i in range(3)]
        held = gen.held_texts([dict(r) for r in results])
        frame = pd.DataFrame({"row": range(3)})
        out = gen.apply_text(None, frame, [], held)  # type: ignore[arg-type]
        for key, (_, field) in lands.items():
            assert out[field].tolist() == [r[key] for r in results], (name, field)
        checked += 1
    assert checked >= 5


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=0, max_size=6),
        min_size=1,
        max_size=5,
    )
)
def test_finalize_joins_sorts_and_numbers_the_blocks_and_lets_them_go(
    blocks: list[list[tuple[int, int]]],
) -> None:
    # The frame from its blocks: joined in block order, stably sorted by `sort_by`, ids numbered from 0 in
    # that order; the list of blocks is emptied once joined, so the caller's only reference to the blocks goes
    # before the sort. Restated with Python's stable sort of (row's keys, place in the join).
    from types import SimpleNamespace

    from generator.ids import make_ids
    from generator.objects.base import ObjectGenerator
    from schemas.model import load_model

    class Sorted(ObjectGenerator):
        sobject = "Case"
        sort_by = ("when", "k")

    model = load_model()
    ctx: Any = SimpleNamespace(model=model)
    rows = [(w, k, f"b{b}r{r}") for b, block in enumerate(blocks) for r, (w, k) in enumerate(block)]
    parts = [
        pd.DataFrame(
            {
                "when": [w for w, _ in block],
                "k": [k for _, k in block],
                "tag": [f"b{b}r{r}" for r in range(len(block))],
            }
        )
        for b, block in enumerate(blocks)
    ]
    frame = Sorted().finalize(ctx, parts)
    assert parts == []
    want = [row for _, row in sorted(enumerate(rows), key=lambda ir: (ir[1][0], ir[1][1], ir[0]))]
    assert list(frame.columns) == ["Id", "when", "k", "tag"]
    assert list(zip(frame["when"], frame["k"], frame["tag"], strict=True)) == want
    ids = make_ids(model.get("Case").key_prefix, 0, len(rows)).tolist()
    assert frame["Id"].tolist() == ids
    assert frame.index.equals(pd.RangeIndex(len(rows)))
