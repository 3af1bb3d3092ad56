"""Near-duplicate detection: planted paraphrases are found, decisions are exact, runs are reproducible."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import textsim
from schemas.textsim import (
    NearDuplicateIndex,
    _densify,
    band_keys,
    jaccard,
    near_duplicates,
    shingle_hashes,
    shingles,
    signatures,
)
from tests.conftest import REPO


def _corpus(seed: int = 1) -> tuple[list[str], set[tuple[int, int]]]:
    rnd = random.Random(seed)
    words = [f"w{i}" for i in range(3000)]
    base = [" ".join(rnd.choice(words) for _ in range(120)) for _ in range(1500)]
    planted = []
    for k in range(200):  # 5% of the words replaced: Jaccard ≈ 0.7-0.75 on 3-shingles
        w = base[k].split()
        for _ in range(6):
            w[rnd.randrange(120)] = f"zz{rnd.randrange(10**6)}"
        planted.append(" ".join(w))
    return base + planted, {(k, 1500 + k) for k in range(200)}


def test_planted_near_duplicates_are_all_found_and_nothing_else() -> None:
    texts, want = _corpus()
    got = {(a, b) for a, b, _ in near_duplicates(texts)}
    assert got == want


def test_every_reported_pair_meets_the_threshold_exactly() -> None:
    texts = ["the quick brown fox jumps over the lazy dog today", "the quick brown fox jumps over the lazy cat today",
             "a completely different sentence about running shoes and socks", "the quick brown fox"]  # fmt: skip
    pairs = near_duplicates(texts)
    for a, b, sim in pairs:
        assert sim == round(jaccard(shingles(texts[a]), shingles(texts[b])), 4) and sim >= 0.5
    assert (0, 1) in {(a, b) for a, b, _ in pairs}
    assert all(2 not in (a, b) for a, b, _ in pairs)


def test_short_and_empty_texts() -> None:
    assert shingles("") == frozenset() and shingles("two words") == frozenset({"two words"})
    assert near_duplicates(["", None, "same text here", "same text here"]) == [(2, 3, 1.0)]


def test_results_do_not_depend_on_hash_randomisation() -> None:
    code = (
        "from tests.schemas.test_textsim import _corpus; from schemas.textsim import near_duplicates;"
        "t,_ = _corpus(5); print(near_duplicates(t[:1600]))"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            env={"PYTHONHASHSEED": s, "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for s in ("1", "2")
    }
    assert len(outs) == 1


def test_texts_without_any_shared_band_have_no_pairs() -> None:
    texts = [f"alpha{i} beta{i} gamma{i} delta{i} epsilon{i}" for i in range(5)]
    assert near_duplicates(texts) == []


def test_hashed_shingles_give_the_same_jaccard_as_the_shingle_strings() -> None:
    # The search runs on 64-bit shingle hashes; the definition is on word strings. They must agree, including
    # texts shorter than three words, repeated shingles, case and punctuation.
    rnd = random.Random(11)
    vocab = ["Alpha", "beta", "GAMMA", "delta", "eps", "zeta", "eta", "theta", "beta,", "(gamma)"]
    # non-ASCII words and separators (texts holding them take the Unicode word pattern; U+212A KELVIN SIGN
    # lower-cases to ASCII "k"): "café" is one word, "a·b" two, "naïve-ish" two
    vocab += ["café", "Straße", "\u212aelvin", "kelvin", "a·b", "naïve-ish", "日本語", "x\u00a0y"]
    texts: list[str | None] = [
        " ".join(rnd.choice(vocab) for _ in range(rnd.randrange(0, 12))) for _ in range(300)
    ]
    texts += [None, "", "one", "one two", "one two three", "one two three one two three"]
    hashes, offsets = shingle_hashes(texts)
    sets = [frozenset(hashes[offsets[i] : offsets[i + 1]].tolist()) for i in range(len(texts))]
    for i in range(len(texts)):
        assert len(sets[i]) == len(shingles(texts[i])), texts[i]
    for _ in range(5000):
        a, b = rnd.randrange(len(texts)), rnd.randrange(len(texts))
        assert jaccard(sets[a], sets[b]) == jaccard(shingles(texts[a]), shingles(texts[b])), (
            texts[a],
            texts[b],
        )


def test_every_pair_at_or_above_the_threshold_is_found_in_a_small_corpus() -> None:
    # Exhaustive check against the definition: all pairs by brute force on the string shingles.
    rnd = random.Random(4)
    vocab = [f"v{i}" for i in range(40)]
    base = [" ".join(rnd.choice(vocab) for _ in range(30)) for _ in range(60)]
    texts = base + [" ".join(w if rnd.random() > 0.08 else "x" for w in t.split()) for t in base[:30]]
    want = set()
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            if jaccard(shingles(texts[i]), shingles(texts[j])) >= 0.5:
                want.add((i, j))
    assert len(want) >= 20
    assert {(a, b) for a, b, _ in near_duplicates(texts)} == want


def _template_corpus() -> list[str | None]:
    # Texts from a few templates with small slots: many share band keys, in groups of 2 to several hundred,
    # as the offline writer's texts do; some are near-duplicates and most are not.
    rnd = random.Random(7)
    templates = [
        "my order {a} arrived {b} and the {c} was {d} so I want {e}",
        "hello team the {a} I bought last {b} stopped {c} after {d} days please {e}",
        "{a} {b} {c} {d} {e}",
    ]
    slots = [f"s{i}" for i in range(4)]
    texts: list[str | None] = []
    for k in range(1800):
        t = templates[k % 3]
        fill = {x: " ".join(rnd.choice(slots) for _ in range(rnd.randrange(1, 3))) for x in "abcde"}
        texts.append(t.format(**fill))
    return [*texts, None, "", "one two", "one two"]


def test_pairs_follow_the_documented_search_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    # The module docstring's procedure restated pair by pair (O(n²)) on the index's own signatures: a
    # candidate shares one band's 3 values (band b: bin b of each of the 3 sketches), is kept when its values' top 16 bits agree on >= 35% of the 96,
    # and is reported when its exact shingle Jaccard is >= 0.5. Groups here reach hundreds of members.
    texts = _template_corpus()
    index = NearDuplicateIndex(texts)
    sig = [row.tolist() for row in signatures(*_hashes_and_lengths(texts))]
    sets = [shingle_hashes([t])[0].tolist() for t in texts]
    live = [i for i in range(len(texts)) if sets[i]]
    bands: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    for i in live:
        for band in range(32):
            bands.setdefault((band, tuple(sig[i][k * 32 + band] for k in range(3))), []).append(i)
    assert max(len(g) for g in bands.values()) > 64  # the many-member path is exercised
    candidates = {(a, b) for g in bands.values() for x, a in enumerate(g) for b in g[x + 1 :]}
    want = []
    agreeing = set()
    for a, b in sorted(candidates):
        agree = sum((x >> 48) == (y >> 48) for x, y in zip(sig[a], sig[b], strict=True)) / 96
        sim = jaccard(set(sets[a]), set(sets[b]))
        if agree >= 0.35:
            agreeing.add((a, b))
            if sim >= 0.5:
                want.append((a, b, round(sim, 4)))
    assert len(want) >= 50
    assert index.pairs() == want
    # the exact check is given each agreeing candidate once, whatever the bands and batches it is met in (a
    # pair is settled in the first band its rows share a key in), and nothing else
    checked: list[tuple[int, int]] = []
    exact = index._jaccards

    def spy(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        checked.extend(zip(lo.tolist(), hi.tolist(), strict=True))
        return exact(lo, hi)

    monkeypatch.setattr(index, "_jaccards", spy)
    for pending in (textsim.MERGE_PENDING, 3):
        monkeypatch.setattr(textsim, "MERGE_PENDING", pending)
        checked.clear()
        assert index.pairs() == want
        assert len(checked) == len(set(checked)) and set(checked) == agreeing
    monkeypatch.undo()
    focus = set(range(0, len(texts), 5))
    assert index.pairs(focus=focus) == [p for p in want if p[0] in focus or p[1] in focus]
    # candidates compared a few at a time: chunk boundaries fall everywhere, the pairs are the same
    monkeypatch.setattr(textsim, "AGREEMENT_CHUNK", 7)
    monkeypatch.setattr(textsim, "EXACT_CHUNK", 5)
    assert index.pairs() == want
    assert index.pairs(focus=focus) == [p for p in want if p[0] in focus or p[1] in focus]
    # the exact check given a few agreeing candidates at a time: the pairs kept are the same, in order
    monkeypatch.setattr(textsim, "EXACT_SLICE", 3)
    assert index.pairs() == want
    assert index.pairs(focus=focus) == [p for p in want if p[0] in focus or p[1] in focus]
    # and as arrays: the same pairs, with the similarities unrounded
    lo, hi, sims = index.pair_arrays()
    assert lo.dtype == hi.dtype == np.int64 and sims.dtype == np.float64
    assert [
        (a, b, round(x, 4)) for a, b, x in zip(lo.tolist(), hi.tolist(), sims.tolist(), strict=True)
    ] == want
    assert all(x >= 0.5 for x in sims.tolist())
    # candidates checked and merged in batches of a few (both the small groups' and the many-member groups'):
    # a pair met in several batches is kept once, the pairs are the same
    monkeypatch.setattr(textsim, "MERGE_PENDING", 3)
    assert index.pairs() == want
    assert index.pairs(focus=focus) == [p for p in want if p[0] in focus or p[1] in focus]
    # the focused search's first filter keeps every key whose low bits match: with 2 bits, most keys pass it
    monkeypatch.setattr(textsim, "FILTER_BITS", 2)
    assert index.pairs(focus=focus) == [p for p in want if p[0] in focus or p[1] in focus]


def test_empty_bins_are_filled_from_the_next_non_empty_bin_to_the_right() -> None:
    # Rotation densification, bin by bin: an empty bin takes the value of the nearest non-empty bin to its
    # right (wrapping around) plus its distance times 0x1000193; a row with no value stays empty.
    rnd = random.Random(3)
    empty = 2**64 - 1
    rows = [
        [empty if rnd.random() < p else rnd.randrange(2**64 - 1) for _ in range(32)] for p in (0, 0.5, 0.97)
    ]
    rows += [[empty] * 32, [empty] * 31 + [5], [7] + [empty] * 31]
    got = _densify(np.array(rows, dtype=np.uint64)).tolist()
    for row, out in zip(rows, got, strict=True):
        for j in range(32):
            if row[j] != empty:
                assert out[j] == row[j]
                continue
            d = next((d for d in range(1, 32) if row[(j + d) % 32] != empty), None)
            want = empty if d is None else (row[(j + d) % 32] + d * 0x1000193) % 2**64
            assert out[j] == want


def test_replacing_rows_together_is_replacing_them_one_by_one() -> None:
    texts = _template_corpus()
    rnd = random.Random(9)
    rows = rnd.sample(range(len(texts)), 120)
    new = [rnd.choice(texts) if k % 7 else None for k in range(len(rows))]
    one, many = NearDuplicateIndex(texts), NearDuplicateIndex(texts)
    for row, text in zip(rows, new, strict=True):
        one.replace(row, text)
    many.replace_many(rows, new)
    assert _same_signatures(one, many)
    assert all(one.shingle_set(r) == many.shingle_set(r) for r in range(len(texts)))
    assert one.pairs() == many.pairs() and one.pairs(focus=rows) == many.pairs(focus=rows)
    fresh = NearDuplicateIndex([dict(zip(rows, new, strict=True)).get(i, t) for i, t in enumerate(texts)])
    assert _same_signatures(fresh, many) and fresh.pairs() == many.pairs()


def test_rows_rewritten_round_after_round_keep_the_index_equal_to_a_fresh_one() -> None:
    # The index numbers shingles and appends replaced rows' codes: round after round of rewrites with words it
    # has never seen (numbered after the first texts') and with old texts, its signatures, shingle sets and
    # pairs stay those of an index built afresh on the current texts, and the codes it holds for rows no longer
    # there never outgrow the live ones (it compacts them).
    texts = _template_corpus()
    index = NearDuplicateIndex(texts)
    rnd = random.Random(11)
    for round_ in range(6):
        rows = rnd.sample(range(len(texts)), 400)
        for k, row in enumerate(rows):
            if k % 3 == 0:
                texts[row] = f"new{round_} words{k % 17} " + (texts[rnd.randrange(len(texts))] or "")
            elif k % 3 == 1:
                texts[row] = texts[rnd.randrange(len(texts))]
            else:
                texts[row] = " ".join(f"w{rnd.randrange(40)}" for _ in range(rnd.randrange(0, 12)))
        index.replace_many(rows, [texts[r] for r in rows])
        fresh = NearDuplicateIndex(texts)
        assert _same_signatures(index, fresh)
        for r in rnd.sample(range(len(texts)), 60):
            assert index.shingle_set(r) == set(shingle_hashes([texts[r]])[0].tolist())
        assert index.pairs() == fresh.pairs()
        assert index.pairs(focus=rows) == [p for p in fresh.pairs() if p[0] in rows or p[1] in rows]
        assert len(index._codes) <= 2 * int(index._size.sum())
    assert len(index._added) > 0  # words never seen were numbered after the first texts'


_ASCII_OR_NOT = st.one_of(
    st.text(alphabet=st.characters(max_codepoint=127), max_size=60),
    st.text(alphabet=st.sampled_from(list("ab_1 ,.\t\n\x00\x1f\x7fé\u212a")), max_size=40),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ASCII_OR_NOT, min_size=2, max_size=6))
def test_hashed_shingles_follow_the_word_pattern_on_any_text(texts: list[str]) -> None:
    # ASCII texts are split into words by a byte table, others by the `\w+` pattern: either way the hashed
    # shingles must be the string shingles (`shingles`, WORD.findall) one for one.
    hashes, offsets = shingle_hashes(texts)
    sets = [frozenset(hashes[offsets[i] : offsets[i + 1]].tolist()) for i in range(len(texts))]
    strings = [shingles(t) for t in texts]
    for i, t in enumerate(texts):
        assert len(sets[i]) == len(strings[i]), t
        for j in range(i + 1, len(texts)):
            assert jaccard(sets[i], sets[j]) == jaccard(strings[i], strings[j]), (t, texts[j])


def test_words_are_hashed_once_with_blake2b_whether_cached_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    # every distinct word's hash is BLAKE2b (8 bytes, little-endian) of its UTF-8 bytes, computed on its first
    # lookup and then kept: hashing the same texts again from the filled cache gives the same shingle hashes
    texts = ["The cat sat on the mat", "the Cat sat, on the mat!", "café naïve café", None, "one two"]
    monkeypatch.setattr(textsim, "_WORD_HASH", textsim._WordHashes())
    first, offsets = shingle_hashes(texts)
    words = {w.encode() for t in texts if t for w in textsim.WORD.findall(t.lower())}
    assert set(textsim._WORD_HASH) == words
    for w in words:
        assert textsim._WORD_HASH[w] == int.from_bytes(hashlib.blake2b(w, digest_size=8).digest(), "little")
    again, offsets_again = shingle_hashes(texts)
    assert (again == first).all() and (offsets_again == offsets).all()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.binary(min_size=96, max_size=96), st.binary(min_size=96, max_size=96)),
        min_size=1,
        max_size=8,
    )
)
def test_equal_bytes_counts_the_equal_bytes_of_two_rows(rows: list[tuple[bytes, bytes]]) -> None:
    # byte for byte, as the signatures' top bytes are compared; equal rows, rows differing by one bit and
    # bytes 0x00/0x80/0xFF (the bit trick's edge cases) included
    rows = [*rows, (rows[0][0], rows[0][0]), (rows[0][0], bytes(b ^ 1 for b in rows[0][0]))]
    rows.append((bytes([0x00, 0x80, 0xFF, 0x7F] * 24), bytes([0x80, 0x00, 0xFF, 0xFF] * 24)))
    a = np.frombuffer(b"".join(x for x, _ in rows), dtype=np.uint64).reshape(len(rows), 12)
    b = np.frombuffer(b"".join(y for _, y in rows), dtype=np.uint64).reshape(len(rows), 12)
    want = [sum(p == q for p, q in zip(x, y, strict=True)) for x, y in rows]
    assert textsim._equal_bytes(a ^ b).tolist() == want


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), max_size=60),
    st.lists(st.integers(0, 2**64 - 1), max_size=10),
    st.integers(1, 8),
)
def test_the_focused_filter_is_isin(keys: list[int], wanted: list[int], bits: int) -> None:
    keys = (
        keys + wanted[::2] + [w ^ (1 << 40) for w in wanted]
    )  # some found, some equal in their low bits only
    k, w = np.array(keys, dtype=np.uint64), np.array(wanted, dtype=np.uint64)
    table = np.zeros(1 << bits, dtype=bool)
    old = textsim.FILTER_BITS
    try:
        textsim.FILTER_BITS = bits
        got = textsim._among(k, w, table)
    finally:
        textsim.FILTER_BITS = old
    assert got.tolist() == np.isin(k, w).tolist() and not table.any()


@pytest.mark.parametrize("batch", [1, 3, 64])
def test_an_index_built_a_batch_at_a_time_is_the_one_built_whole(
    batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The index hashes, signs and numbers its texts BATCH_TEXTS at a time, letting each batch go once numbered:
    # with batch boundaries everywhere (and the distinct hashes merged every few batches), every row's shingle
    # set is its text's alone, and the signatures, codes and pairs are those of one batch holding every text.
    texts = [*_template_corpus()[:300], None, "", "one", "two words"]
    whole = NearDuplicateIndex(texts)
    monkeypatch.setattr(textsim, "BATCH_TEXTS", batch)
    monkeypatch.setattr(textsim, "MERGE_PENDING", 50)
    batched = NearDuplicateIndex(texts)
    assert _same_signatures(batched, whole) and (batched._vocab == whole._vocab).all()
    for r, text in enumerate(texts):
        assert batched.shingle_set(r) == set(shingle_hashes([text])[0].tolist())
    assert batched.pairs() == whole.pairs() and len(whole.pairs()) > 0


def _hashes_and_lengths(texts: list[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """Every text's shingle hashes, and how many each text has."""
    hashes, offsets = shingle_hashes(texts)
    return hashes, np.diff(offsets)


def _same_signatures(a: NearDuplicateIndex, b: NearDuplicateIndex) -> bool:
    return bool((a.keys == b.keys).all() and (a.sig16 == b.sig16).all())


def test_the_index_holds_its_signatures_band_keys_and_values_top_bits() -> None:
    # what the search reads of a signature, restated from the module docstring on signatures made here: band
    # b's key mixes bin b of each of the 3 sketches (two rows share a key when they share those 3 values), of
    # which the index keeps the top 32 bits, and the agreement compares the values' top 16 bits
    texts = _template_corpus()
    index = NearDuplicateIndex(texts)
    sig = signatures(*_hashes_and_lengths(texts))
    assert (index.sig16 == (sig >> np.uint64(48))).all() and index.sig16.dtype == np.uint16
    assert (index.keys == (band_keys(sig) >> np.uint64(32))).all() and index.keys.dtype == np.uint32
    live = [i for i, t in enumerate(texts) if shingle_hashes([t])[0].size]
    for band in range(32):
        values = {i: tuple(int(sig[i, k * 32 + band]) for k in range(3)) for i in live}
        by_key: dict[int, set[tuple[int, ...]]] = {}
        for i in live:
            by_key.setdefault(int(index.keys[band, i]), set()).add(values[i])
        by_values: dict[tuple[int, ...], set[int]] = {}
        for i in live:
            by_values.setdefault(values[i], set()).add(int(index.keys[band, i]))
        assert all(len(keys) == 1 for keys in by_values.values())  # the same values, the same key
        assert sum(len(v) > 1 for v in by_key.values()) == 0  # and no two value triples share one here
    # the zero rows (no shingles) hold zeros, whatever their keys
    empty = sorted(set(range(len(texts))) - set(live))
    assert empty and not index.sig16[empty].any()


def test_a_new_index_holds_each_rows_distinct_codes_once_and_nothing_more() -> None:
    # A new index numbers its texts into one array sized for every shingle, shrunk to the distinct ones at the
    # end: texts repeating shingles leave it exactly as long as the rows' distinct codes, each row's codes
    # standing for its own shingle set (restated from the hashes).
    texts: list[str | None] = [
        "a b c a b c a b c",
        "one two three one two three four",
        None,
        "",
        "x y",
        *_template_corpus()[:40],
    ]
    index = NearDuplicateIndex(texts)
    _, lengths = _hashes_and_lengths(texts)
    assert len(index._codes) == int(index._size.sum()) < int(lengths.sum())  # repeats were dropped
    for r, text in enumerate(texts):
        own = set(shingle_hashes([text])[0].tolist())
        assert index.shingle_set(r) == own and int(index._size[r]) == len(own)


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_compacting_in_place_keeps_every_rows_codes_whatever_the_chunk(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    # The old segments of replaced rows are dropped in place, COMPACT_CHUNK codes at a time: with chunks of one
    # code, a few, or all of them, every row's codes are still its shingle set (restated from its current
    # text's hashes), the array holds the live codes and nothing more, and the pairs are a fresh index's.
    monkeypatch.setattr(textsim, "COMPACT_CHUNK", chunk)
    texts: list[str | None] = list(_template_corpus()[:300])
    index = NearDuplicateIndex(texts)
    rnd = random.Random(5)
    compacted = 0
    for round_ in range(5):
        rows = rnd.sample(range(len(texts)), 120)
        for k, row in enumerate(rows):
            texts[row] = (
                None if k % 11 == 0 else f"round{round_} {k} " + (texts[rnd.randrange(len(texts))] or "")
            )
        before = len(index._codes)
        index.replace_many(rows, [texts[r] for r in rows])
        if len(index._codes) < before:
            compacted += 1
            assert len(index._codes) == int(index._size.sum())
        for r, text in enumerate(texts):
            assert index.shingle_set(r) == set(shingle_hashes([text])[0].tolist())
    assert compacted >= 1
    assert index.pairs() == NearDuplicateIndex(texts).pairs()


def test_a_round_of_rewriting_does_not_copy_the_codes() -> None:
    # Replacing a few rows appends their codes by growing the array in place: what the round allocates is
    # about the new codes, not a second copy of all the codes (which a concatenation made). numpy reports its
    # arrays' memory to tracemalloc.
    import tracemalloc

    texts = [t for t in _corpus()[0] for _ in range(4)]  # 6,800 texts of ~118 distinct shingles
    rows = list(range(0, len(texts), 400))  # 17 rows: far from the half that compacts
    # traced from before the index is made: the growth of a block allocated untraced counts whole
    tracemalloc.start()
    try:
        index = NearDuplicateIndex(texts)
        size = index._codes.nbytes
        assert size > 3_000_000
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        index.replace_many(rows, [f"new {r} " + texts[r] for r in rows])
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < size / 4, (peak, size)
    assert all(
        index.shingle_set(r) == set(shingle_hashes([f"new {r} " + texts[r]])[0].tolist()) for r in rows
    )


def test_a_search_does_not_copy_the_signatures_top_bytes() -> None:
    # The agreement's first filter reads the values' top bytes as 64-bit words, held so in the index: a search
    # allocates its bands' sort orders (~60 bytes a text here) but no copy of those bytes, which are 96 bytes a
    # text (made anew at every search while the index held the values' top 16 bits as one uint16 array).
    import tracemalloc

    rng = random.Random(1)
    words = [f"w{i}" for i in range(5000)]
    texts = [" ".join(rng.choice(words) for _ in range(30)) for _ in range(20_000)]
    index = NearDuplicateIndex(texts)
    assert index._top.shape == (len(texts), textsim.WIDTH // 8) and index._top.flags.c_contiguous
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        index.pair_arrays()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < textsim.WIDTH * len(texts), (peak, len(texts))
