"""Rewards as CRMArena computes them, on hand-worked examples and properties of the answer parser."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from evals.reward import STATES, extract_answers, normalise, score_chat, score_function_calling, token_f1
from evals.tasks import normalise_answer
from schemas.taskspec import MONTHS

ID = "005Ws000001xYl3IAE"


def test_normalisation_and_token_f1_by_hand() -> None:
    assert normalise("The  90-day_window, isn't it?") == "90 day window isn t it"
    # "90 days." vs "Store credit lasts 90 days": tokens {90, days} vs {store, credit, lasts, 90, days}
    # precision 2/2, recall 2/5 -> F1 = 2 * 1 * 0.4 / 1.4
    assert abs(token_f1("90 days.", "Store credit lasts 90 days") - 0.8 / 1.4) < 1e-12
    assert token_f1("an apple", "the apple") == 1.0  # articles go
    assert token_f1("None", "30 days") == 0.0


def test_function_calling_is_pure_string_equality() -> None:
    assert score_function_calling(ID, (ID,), "exact_match").reward == 1.0
    assert score_function_calling(f" {ID}", (ID,), "exact_match").reward == 0.0
    assert score_function_calling(f"'{ID}'", (ID,), "exact_match").reward == 0.0
    assert score_function_calling("None", ("None",), "exact_match").reward == 1.0
    assert score_function_calling(None, ("None",), "exact_match").reward == 0.0  # JSON null is not "None"
    assert score_function_calling([ID], (ID,), "exact_match").reward == 0.0
    kqa = score_function_calling("90 days", ("90 days.",), "fuzzy_match")
    assert kqa.reward == 1.0 and kqa.em


def test_chat_strips_quotes_then_parses() -> None:
    assert score_chat(f' "{ID}" ', (ID,), "exact_match", "case_routing").reward == 1.0
    assert score_chat(f"The best agent is {ID}.", (ID,), "exact_match", "case_routing").reward == 1.0
    assert score_chat(f"{ID} or 005Ws000001xYl3IAF", (ID,), "exact_match", "case_routing").reward == 0.0
    assert score_chat("No record matches: none.", ("None",), "exact_match", "handle_time").reward == 1.0
    assert score_chat("Mostly in march.", ("March",), "exact_match", "monthly_trend_analysis").reward == 1.0
    assert (
        score_chat("New York closes fastest", ("NY",), "exact_match", "best_region_identification").reward
        == 1.0
    )
    assert score_chat("in CA", ("NY",), "exact_match", "best_region_identification").reward == 0.0


def test_task_files_of_either_answer_format_give_the_same_ground_truth() -> None:
    assert normalise_answer(ID) == normalise_answer([ID]) == (ID,)
    assert normalise_answer(None) == normalise_answer([None]) == normalise_answer([]) == ("None",)


_filler = st.lists(
    st.sampled_from(["the", "agent", "is", "with", "and", "answer:", "-", "\n", "id"]), max_size=6
)
_ids = st.text(string.ascii_letters + string.digits, min_size=15, max_size=15).filter(
    lambda s: any(c.isdigit() for c in s) and any(c.isalpha() for c in s)
)


@given(st.lists(_ids, min_size=1, max_size=3, unique=True), _filler, _filler)
def test_ids_are_read_from_any_surrounding_words(ids: list[str], before: list[str], after: list[str]) -> None:
    ids18 = [i + "AAA" for i in ids]
    text = " ".join([*before, ", ".join(ids18), *after])
    assert extract_answers(text, "case_routing") == ids18


@given(st.lists(st.sampled_from(MONTHS), min_size=1, max_size=3, unique=True), _filler)
def test_months_are_read_in_any_case(months: list[str], filler: list[str]) -> None:
    text = " ".join([*filler, " and ".join(m.upper() for m in months)])
    assert extract_answers(text, "monthly_trend_analysis") == months


@given(st.lists(st.sampled_from(sorted(STATES.items())), min_size=1, max_size=3, unique=True), st.booleans())
def test_states_are_read_by_code_or_name(states: list[tuple[str, str]], by_name: bool) -> None:
    text = "Fastest: " + ", ".join(name if by_name else code for name, code in states)
    assert extract_answers(text, "best_region_identification") == list(dict.fromkeys(c for _, c in states))


@given(st.text(alphabet=string.ascii_lowercase + " .,", max_size=40))
def test_text_with_nothing_to_extract_reads_as_none(text: str) -> None:
    assert extract_answers(text, "handle_time") == ["None"]
