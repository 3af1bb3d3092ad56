"""A text writer as a plug-in package would ship it (registered through an entry point in the tests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from generator.text.base import TextKind, TextRequest
from generator.text.offline import OfflineWriter


class UpperOfflineWriter(OfflineWriter):
    """The offline writer's texts, counted: a stand-in for a third-party writer."""

    name = "plug"
    calls: ClassVar[list[int]] = []

    async def write(self, kind: TextKind, requests: Sequence[TextRequest]) -> list[dict[str, Any]]:
        self.calls.append(len(requests))
        return await super().write(kind, requests)
