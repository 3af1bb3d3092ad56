"""The one error root of orgseed.

Every error carries structured fields (kept as attributes) and a message that says where the problem
is and what to do next. `Terminal` errors will fail again if retried; `Transient` ones may succeed on a
retry, so retry policies key off the type, never off message text.
"""

from __future__ import annotations

from typing import Any


class OrgseedError(Exception):
    """Root of every orgseed error."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields
        for key, value in fields.items():
            setattr(self, key, value)

    def __str__(self) -> str:
        return self.message


class Terminal(OrgseedError):
    """Retrying will not help: the input or the configuration must change."""


class Transient(OrgseedError):
    """A passing condition (network, rate limit, lock); a retry may succeed."""


class ModelError(Terminal):
    """An object schema in `schemas/objects/` is malformed (names the file and JSON pointer)."""


class ProfileError(Terminal):
    """A profile is malformed or inconsistent (names the file and, where known, the line)."""


class UsageError(Terminal):
    """A command was called with arguments that cannot work."""


def did_you_mean(name: str, candidates: list[str] | tuple[str, ...] | Any) -> str:
    """A ' Did you mean X?' suffix for an unknown name, or '' when nothing is close."""
    import difflib

    pool = list(candidates)
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in pool}
        if name.lower() in lowered:
            close = [lowered[name.lower()]]
    return f" Did you mean `{close[0]}`?" if close else ""
