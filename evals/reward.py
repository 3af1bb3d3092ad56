"""Rewards as CRMArena computes them (reference §8.3).

- Function calling (CRMArena's ToolEnv): the `respond` content must equal the ground truth exactly (pure
  string equality, no trimming); a None answer is the string "None".
- ReAct / Act (CRMArena's chat Evaluator): a single ground truth matches the answer with surrounding
  whitespace and quotes stripped; otherwise the answer is *parsed* into a list of Ids / month names / state
  codes and compared with the ground truth as a sorted list. CRMArena parses with an LLM; orgseed parses with
  `extract_answers` (deterministic rules for the same three kinds), or with an LLM judge when asked
  (`--judge MODEL`).
- Knowledge QA (fuzzy_match, both): token F1 after CRMArena's normalisation (lower case, underscores and
  punctuation to spaces, articles dropped, whitespace collapsed); exact match after the same normalisation is
  kept beside it. The leaderboard's KQA column is the F1. (CRMArena also reports BLEU and ROUGE, which need
  libraries outside orgseed's stack; they are not computed.)

The ground truth comes as a tuple of strings whatever the task files' answer format (`tasks.normalise_answer`),
so the task files need no per-framework format.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from schemas.taskspec import MONTHS, is_task, spec

_PUNCT = set(string.punctuation) | {"\u2018", "\u2019", "\u00b4", "`"}
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ID = re.compile(r"\b(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{15}(?:[A-Za-z0-9]{3})?\b")
_MONTH = re.compile(r"\b(" + "|".join(MONTHS) + r")\b", re.IGNORECASE)
STATES: dict[str, str] = {
    "Alabama": "AL", "Alaska": "AK", "Arizona": "AZ", "Arkansas": "AR", "California": "CA", "Colorado": "CO",
    "Connecticut": "CT", "Delaware": "DE", "District of Columbia": "DC", "Florida": "FL", "Georgia": "GA",
    "Hawaii": "HI", "Idaho": "ID", "Illinois": "IL", "Indiana": "IN", "Iowa": "IA", "Kansas": "KS",
    "Kentucky": "KY", "Louisiana": "LA", "Maine": "ME", "Maryland": "MD", "Massachusetts": "MA",
    "Michigan": "MI", "Minnesota": "MN", "Mississippi": "MS", "Missouri": "MO", "Montana": "MT",
    "Nebraska": "NE", "Nevada": "NV", "New Hampshire": "NH", "New Jersey": "NJ", "New Mexico": "NM",
    "New York": "NY", "North Carolina": "NC", "North Dakota": "ND", "Ohio": "OH", "Oklahoma": "OK",
    "Oregon": "OR", "Pennsylvania": "PA", "Rhode Island": "RI", "South Carolina": "SC", "South Dakota": "SD",
    "Tennessee": "TN", "Texas": "TX", "Utah": "UT", "Vermont": "VT", "Virginia": "VA", "Washington": "WA",
    "West Virginia": "WV", "Wisconsin": "WI", "Wyoming": "WY",
}  # fmt: skip
_STATE_CODE = re.compile(r"\b(" + "|".join(sorted(STATES.values())) + r")\b")
_STATE_NAME = re.compile(r"\b(" + "|".join(sorted(STATES, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_NONE = re.compile(r"\bnone\b", re.IGNORECASE)

Parser = Callable[[str, str], list[str]]  # (answer text, task) -> extracted answers


@dataclass(frozen=True)
class Score:
    reward: float  # 0/1 for exact_match, token F1 for fuzzy_match
    parsed: list[str]  # what the answer was read as
    em: bool  # normalised exact match (fuzzy tasks) / the reward (exact tasks)
    f1: float | None = None


def normalise(text: str) -> str:
    """Lower case, underscores and punctuation to spaces, articles removed, whitespace collapsed."""
    text = text.replace("_", " ").lower()
    text = "".join(" " if ch in _PUNCT else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def token_f1(prediction: str, truth: str) -> float:
    pred, gold = normalise(prediction).split(), normalise(truth).split()
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def extract_answers(text: str, task: str) -> list[str]:
    """The Ids (month names for monthly trend, state codes for best region) in `text`, in order, without
    repeats; ['None'] when there are none."""
    found: list[str] = []
    kind = spec(task).answer if is_task(task) else "id"  # what the task's answers are (schemas/taskspec.py)
    if kind == "month":
        found = [m.group(1).capitalize() for m in _MONTH.finditer(text)]
    elif kind == "state":
        hits = [(m.start(), m.group(1)) for m in _STATE_CODE.finditer(text)]
        hits += [(m.start(), STATES[_title(m.group(1))]) for m in _STATE_NAME.finditer(text)]
        found = [code for _, code in sorted(hits)]
    else:
        found = [m.group(0) for m in _ID.finditer(text)]
    unique = list(dict.fromkeys(found))
    return unique or ["None"]


def _title(name: str) -> str:
    return next(k for k in STATES if k.lower() == name.lower())


def score_function_calling(proposed: Any, truth: Sequence[str], metric: str) -> Score:
    """CRMArena's ToolEnv: exact string equality; token F1 for fuzzy_match."""
    gold = ", ".join(truth)
    if metric == "fuzzy_match":
        text = proposed if isinstance(proposed, str) else str(proposed)
        f1 = token_f1(text, gold)
        return Score(f1, [text], normalise(text) == normalise(gold), f1)
    ok = isinstance(proposed, str) and proposed == gold
    return Score(1.0 if ok else 0.0, [proposed if isinstance(proposed, str) else repr(proposed)], ok)


def score_chat(
    proposed: str, truth: Sequence[str], metric: str, task: str, parser: Parser | None = None
) -> Score:
    """CRMArena's chat Evaluator (ReAct / Act)."""
    if metric == "fuzzy_match":
        f1 = token_f1(proposed, truth[0])
        return Score(f1, [proposed], normalise(proposed) == normalise(truth[0]), f1)
    if len(truth) == 1:
        cleaned = proposed.strip().strip('"').strip("'")
        if cleaned == truth[0]:
            return Score(1.0, [cleaned], True)
    parsed = (parser or extract_answers)(proposed, task)
    ok = sorted(parsed) == sorted(truth)
    return Score(1.0 if ok else 0.0, parsed, ok)


def mentions_none(text: str) -> bool:
    return bool(_NONE.search(text))
