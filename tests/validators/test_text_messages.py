"""`validators.text._messages` (every agent-written message of every case, for the offer checks) against a
restatement in plain Python, message by message, on small random frames: cases repeated (a repeated id's last
row names its issue) and missing, messages without a text or an id, emails incoming and outgoing, carriers
named by the emails' last latent row, the remedies each text offers outside its case's issue name.

Either the messages are worked out from the frames (the whole org read) or, as a staged run does, fed to
`MessageOffers` a block at a time as the objects are read, the blocks cut anywhere; both must be the
restatement's. The messages are held as arrays by case and made per case when asked; the restatement appends
each message to its case's list, the chats first, then the emails, each in record order. The remedies each
text offers are written out by hand beside it (`TEXTS`), not worked out by the code under test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.model import load_model
from validators.load import BundleData
from validators.text import CaseIssues, MessageOffers, _messages

MODEL = load_model()
CASES = [None, "500A", "500B", "500C", "500Z"]  # 500Z: named by messages, not among the cases
ISSUES = {"a0X1": "Late Delivery", "a0X2": "Refund Delay"}
POLICIES = {"remedies": {"refund": {"phrase": "full refund"}, "replace": {"phrase": "replacement unit"}}}
# a text → (the remedies an email with it offers, those a chat with it offers), each for a case whose issue is
# not "Refund Delay" and one whose issue is (its name is cut out of the text first)
TEXTS: dict[str | None, tuple[list[str], list[str], list[str], list[str]]] = {
    None: ([], [], [], []),
    "hello": ([], [], [], []),
    "We can issue a full refund today.": (["refund"], [], ["refund"], []),
    "Ann (Agent): a replacement unit or a full refund?": (["refund", "replace"], ["refund", "replace"]) * 2,
    "Bo: I want a full refund\nAnn (Agent): a replacement unit\nit ships": (
        ["refund", "replace"],
        ["replace"],
    )
    * 2,
    "Ann (Agent): your refund delay is noted; a full refund delay too": (["refund"], ["refund"], [], []),
}

rows = st.lists(
    st.tuples(
        st.sampled_from(CASES),
        st.sampled_from(list(TEXTS)),
        st.sampled_from(["true", "false"]),
        st.sampled_from(["id", None]),
    ),
    max_size=12,
)
case_rows = st.lists(st.tuples(st.sampled_from(CASES[:4]), st.sampled_from([None, *ISSUES])), max_size=6)


def _frame(prefix: str, drawn: list[tuple[Any, ...]], case: str, text: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Id": [f"{prefix}{k:03d}" if rid else None for k, (_, _, _, rid) in enumerate(drawn)],
            "_line": [2 + 2 * k for k in range(len(drawn))],  # lines need not be consecutive
            case: [c for c, _, _, _ in drawn],
            text: [t for _, t, _, _ in drawn],
            "Incoming": [i for _, _, i, _ in drawn],
        },
        dtype=object,
    ).astype({"_line": "int64"})


def _fed(frame: pd.DataFrame, sobject: str, data: BundleData, cases: CaseIssues, cut: int) -> MessageOffers:
    """What a staged run works out as it reads an object: its rows fed a block of `cut` rows at a time."""
    done = MessageOffers.start(sobject, data, cases)
    for at in range(0, len(frame), cut):
        done.feed(frame.iloc[at : at + cut])
    return done


@given(
    rows,
    rows,
    case_rows,
    st.lists(st.tuples(st.integers(0, 11), st.booleans()), max_size=12),
    st.booleans(),
    st.integers(1, 5),
)
@settings(max_examples=300, deadline=None)
def test_messages_are_each_cases_agent_messages_in_order(
    chat_rows: list[Any],
    email_rows: list[Any],
    drawn_cases: list[tuple[Any, Any]],
    latent_rows: list[tuple[int, bool]],
    staged: bool,
    cut: int,
) -> None:
    chats = _frame("570", chat_rows, "CaseId", "Body")
    emails = _frame("02s", email_rows, "ParentId", "TextBody")
    cases = pd.DataFrame(
        {"Id": [c for c, _ in drawn_cases], "IssueId__c": [i for _, i in drawn_cases]}, dtype=object
    )
    issues = pd.DataFrame({"Id": list(ISSUES), "Name": list(ISSUES.values())}, dtype=object)
    latent = pd.DataFrame(
        {
            "Id": [f"02s{k:03d}" for k, _ in latent_rows],
            "_kind": ["agent_offer" if carries else "reply" for _, carries in latent_rows],
        }
    )
    raw = {"LiveChatTranscript": chats, "EmailMessage": emails, "Case": cases, "Issue__c": issues}
    data = BundleData(
        root=Path("."), model=MODEL, raw=raw, latent={"EmailMessage": latent}, policies=POLICIES
    )
    read = {}
    if staged:
        shared = CaseIssues.of(cases, issues)
        read = {
            name: _fed(raw[name], name, data, shared, cut) for name in ("LiveChatTranscript", "EmailMessage")
        }
        data = BundleData(
            root=Path("."), model=MODEL, raw={"Case": cases, "Issue__c": issues}, latent=data.latent
        )

    # the restatement: a case's issue is its id's last row's; an email carries its case's offer when the last
    # latent row of its id says so
    issue_of: dict[str, Any] = {}
    for cid, issue in drawn_cases:
        if cid is not None:
            issue_of[cid] = issue
    last_kind: dict[str, str] = {}
    for k, carries in latent_rows:
        last_kind[f"02s{k:03d}"] = "agent_offer" if carries else "reply"
    want: dict[str, list[tuple[Any, ...]]] = {}
    for sobject, frame, case_col, text_col, channel in (
        ("LiveChatTranscript", chats, "CaseId", "Body", "chat"),
        ("EmailMessage", emails, "ParentId", "TextBody", "email"),
    ):
        for p in range(len(frame)):
            row = frame.iloc[p]
            if channel == "email" and row["Incoming"] != "false":
                continue
            case, text = row[case_col], row[text_col]
            if case not in issue_of or text is None:
                continue
            delayed = ISSUES.get(issue_of[case]) == "Refund Delay"
            offers = TEXTS[text][2 * delayed + (channel == "chat")]
            carries = channel == "chat" or last_kind.get(row["Id"]) == "agent_offer"
            want.setdefault(case, []).append(
                (sobject, row["Id"], int(row["_line"]), channel, carries, offers)
            )

    got = _messages(data, read)
    asked = ["500A", "500B", "500C", "500Z", None]
    for case, k in zip(asked, got.codes(asked), strict=True):
        messages = [(m.sobject, m.id, m.line, m.channel, m.offer, m.offers) for m in got.of(k)]
        assert messages == (want.get(case, []) if case is not None else []), case


def test_an_id_round_trips_through_the_bytes_it_is_kept_as() -> None:
    """Ids are kept as their UTF-8 bytes: one with characters beyond ASCII, a long one and none come back."""
    cases = pd.DataFrame({"Id": ["500A"], "IssueId__c": [None]}, dtype=object)
    issues = pd.DataFrame({"Id": [], "Name": []}, dtype=object)
    shared = CaseIssues.of(cases, issues)
    ids = ["02sé😀", None, "x" * 5000, "02s1"]
    frame = pd.DataFrame(
        {
            "Id": ids,
            "_line": [2, 3, 4, 9],
            "ParentId": ["500A"] * 4,
            "TextBody": ["hi"] * 4,
            "Incoming": ["false"] * 4,
        },
        dtype=object,
    )
    done = MessageOffers("EmailMessage", {}, shared)
    done.feed(frame)
    assert [done.id(i) for i in range(len(done))] == ids
    assert list(done.line) == [2, 3, 4, 9]
