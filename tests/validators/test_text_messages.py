"""`validators.text._messages` (every agent-written message of every case, for the offer checks) against a
restatement in plain Python, message by message, on small random frames: cases repeated and missing,
messages without a text, emails incoming and outgoing, carriers named by the emails' last latent row, and
(the staged path) offers worked out as the objects were read, given by record position.

The messages are held as arrays sorted by case and made per case when asked; the restatement appends each
message to its case's list, the chats first, then the emails, each in record order."""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.model import load_model
from validators.load import BundleData
from validators.text import _NO_OFFER, MessageOffers, _messages

MODEL = load_model()
CASES = [None, "500A", "500B", "500C"]
KINDS = [["refund"], ["refund", "replace"], ["store_credit"]]

rows = st.lists(
    st.tuples(
        st.sampled_from(CASES), st.sampled_from([None, "hello", "offer"]), st.sampled_from(["true", "false"])
    ),
    max_size=12,
)


def _frame(prefix: str, drawn: list[tuple[Any, Any, Any]], case: str, text: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Id": [f"{prefix}{k:03d}" for k in range(len(drawn))],
            "_line": [2 + 2 * k for k in range(len(drawn))],  # lines need not be consecutive
            case: [c for c, _, _ in drawn],
            text: [t for _, t, _ in drawn],
            "Incoming": [i for _, _, i in drawn],
        },
        dtype=object,
    ).astype({"_line": "int64"})


def _read(frame: pd.DataFrame, sobject: str, offered: dict[int, int]) -> MessageOffers:
    """What the staged run works out as it reads an object: its rows, the positions without a text, and the
    positions offering something (here drawn, not read from the texts)."""
    text = "Body" if sobject == "LiveChatTranscript" else "TextBody"
    done = MessageOffers(sobject, {}, {})
    done.rows = len(frame)
    done.textless = array("q", [p for p, t in enumerate(frame[text]) if t is None])
    for p in sorted(offered):
        done.positions.append(p)
        done.codes.append(offered[p])
    done.kinds = KINDS
    return done


@given(
    rows,
    rows,
    st.lists(st.tuples(st.integers(0, 11), st.booleans()), max_size=12),
    st.booleans(),
    st.dictionaries(st.integers(0, 11), st.integers(0, 2)),
    st.dictionaries(st.integers(0, 11), st.integers(0, 2)),
)
@settings(max_examples=300, deadline=None)
def test_messages_are_each_cases_agent_messages_in_order(
    chat_rows: list[Any],
    email_rows: list[Any],
    latent_rows: list[tuple[int, bool]],
    staged: bool,
    chat_offers: dict[int, int],
    email_offers: dict[int, int],
) -> None:
    chats = _frame("570", chat_rows, "CaseId", "Body")
    emails = _frame("02s", email_rows, "ParentId", "TextBody")
    latent = pd.DataFrame(
        {
            "Id": [f"02s{k:03d}" for k, _ in latent_rows],
            "_kind": ["agent_offer" if carries else "reply" for _, carries in latent_rows],
        }
    )
    data = BundleData(
        root=Path("."),
        model=MODEL,
        raw={"LiveChatTranscript": chats, "EmailMessage": emails},
        latent={"EmailMessage": latent},
    )
    chat_offers = {p: c for p, c in chat_offers.items() if p < len(chats)}
    email_offers = {p: c for p, c in email_offers.items() if p < len(emails)}
    read = (
        {
            "LiveChatTranscript": _read(chats, "LiveChatTranscript", chat_offers),
            "EmailMessage": _read(emails, "EmailMessage", email_offers),
        }
        if staged
        else {}
    )

    # the restatement: an email carries its case's offer when the last latent row of its id says so
    last_kind: dict[str, str] = {}
    for k, carries in latent_rows:
        last_kind[f"02s{k:03d}"] = "agent_offer" if carries else "reply"
    want: dict[str, list[tuple[Any, ...]]] = {}
    for sobject, frame, case_col, text_col, channel, offered in (
        ("LiveChatTranscript", chats, "CaseId", "Body", "chat", chat_offers),
        ("EmailMessage", emails, "ParentId", "TextBody", "email", email_offers),
    ):
        for p in range(len(frame)):
            row = frame.iloc[p]
            if channel == "email" and row["Incoming"] != "false":
                continue
            case, text = row[case_col], row[text_col]
            if case is None or text is None:
                continue
            body = "" if staged else text
            offers = (KINDS[offered[p]] if p in offered else _NO_OFFER) if staged else None
            carries = channel == "chat" or last_kind.get(row["Id"]) == "agent_offer"
            want.setdefault(case, []).append(
                (sobject, row["Id"], int(row["_line"]), channel, body, carries, offers)
            )

    got = _messages(data, read)
    asked = ["500A", "500B", "500C", "500Z", None]
    for case, k in zip(asked, got.codes(asked), strict=True):
        messages = [(m.sobject, m.id, m.line, m.channel, m.body, m.offer, m.offers) for m in got.of(k)]
        assert messages == (want.get(case, []) if case is not None else []), case
