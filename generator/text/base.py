"""The writer interface. A writer turns latent facts into the free text of records.

Requests carry a stable `key` (the record or thread id) and JSON-serialisable `facts`; results are dicts
whose shape depends on the kind (see `OUTPUT_SCHEMAS`). Writers must return exactly one result per
request, in request order, and must never drop a request: a request they cannot serve raises.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from schemas.profile import Profile


class TextKind(StrEnum):
    PRODUCT = "product"
    ISSUE = "issue"
    CATEGORY = "category"
    KNOWLEDGE = "knowledge"
    CASE = "case"
    EMAIL_THREAD = "email_thread"
    CHAT = "chat"
    PARAPHRASE = "paraphrase"
    PRODUCT_MENTION = "product_mention"


@dataclass(frozen=True)
class TextRequest:
    kind: TextKind
    key: str
    facts: Mapping[str, Any] = field(default_factory=dict)


_STR = {"type": "string", "minLength": 1}

OUTPUT_SCHEMAS: dict[TextKind, dict[str, Any]] = {
    TextKind.PRODUCT: {
        "type": "object",
        "properties": {"name": _STR, "description": _STR},
        "required": ["name", "description"],
        "additionalProperties": False,
    },
    TextKind.ISSUE: {
        "type": "object",
        "properties": {"name": _STR, "description": _STR},
        "required": ["name", "description"],
        "additionalProperties": False,
    },
    TextKind.CATEGORY: {
        "type": "object",
        "properties": {"description": _STR},
        "required": ["description"],
        "additionalProperties": False,
    },
    TextKind.KNOWLEDGE: {
        "type": "object",
        "properties": {"title": _STR, "summary": _STR, "body": _STR},
        "required": ["title", "summary", "body"],
        "additionalProperties": False,
    },
    TextKind.CASE: {
        "type": "object",
        "properties": {"subject": _STR, "description": _STR},
        "required": ["subject", "description"],
        "additionalProperties": False,
    },
    TextKind.EMAIL_THREAD: {
        "type": "object",
        "properties": {
            "messages": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"subject": _STR, "body": _STR},
                    "required": ["subject", "body"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["messages"],
        "additionalProperties": False,
    },
    TextKind.CHAT: {
        "type": "object",
        "properties": {"body": _STR},
        "required": ["body"],
        "additionalProperties": False,
    },
    TextKind.PARAPHRASE: {
        "type": "object",
        "properties": {"text": _STR},
        "required": ["text"],
        "additionalProperties": False,
    },
    TextKind.PRODUCT_MENTION: {
        "type": "object",
        "properties": {"mention": _STR, "search_term": _STR},
        "required": ["mention", "search_term"],
        "additionalProperties": False,
    },
}


# Where each kind's results land: result key → (sObject, field). An email thread's keys are those of each of
# its `messages`, the i-th landing in the thread's i-th EmailMessage. Paraphrases and product mentions become
# task queries, not record fields. The generators fill records from this table (`ObjectGenerator.apply_text`)
# and the writer's checks judge each text as the validators will judge its field (`checks.py`).
LANDS_IN: dict[TextKind, dict[str, tuple[str, str]]] = {
    TextKind.PRODUCT: {"name": ("Product2", "Name"), "description": ("Product2", "Description")},
    TextKind.ISSUE: {"name": ("Issue__c", "Name"), "description": ("Issue__c", "Description__c")},
    TextKind.CATEGORY: {"description": ("ProductCategory", "Description")},
    TextKind.KNOWLEDGE: {
        "title": ("Knowledge__kav", "Title"),
        "summary": ("Knowledge__kav", "Summary"),
        "body": ("Knowledge__kav", "FAQ_Answer__c"),
    },
    TextKind.CASE: {"subject": ("Case", "Subject"), "description": ("Case", "Description")},
    TextKind.EMAIL_THREAD: {"subject": ("EmailMessage", "Subject"), "body": ("EmailMessage", "TextBody")},
    TextKind.CHAT: {"body": ("LiveChatTranscript", "Body")},
}


class TextWriter(ABC):
    """Writes free text for batches of requests of one kind."""

    name: str = "writer"
    # True for writers configured by the LLM flags (--model, --base-url, ...; `RunSpec.writer_options`).
    takes_llm_settings: ClassVar[bool] = False

    @classmethod
    def for_run(cls, seed: int, profile: Profile, options: tuple[tuple[str, Any], ...]) -> TextWriter:
        """The writer of a run: its seed, its profile and its options (`RunSpec.writer_options`). Every
        writer registered in `orgseed.writers` defines it (wrappers such as the task builders' counter need not)."""
        raise NotImplementedError(
            f"{cls.__name__} defines no for_run, so it cannot be registered as a writer."
        )

    @abstractmethod
    async def write(self, kind: TextKind, requests: Sequence[TextRequest]) -> list[dict[str, Any]]:
        """One result per request, in order."""

    def describe(self) -> dict[str, Any]:
        """What the manifest records about this writer."""
        return {"name": self.name}

    def forget_memos(self) -> None:  # noqa: B027 - optional hook
        """Let go of what the writer memoised only to be quicker (each memo a function of its key): called when
        generation is done, so that what generation filled them with is not held through the stages after it."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients and flush caches."""
