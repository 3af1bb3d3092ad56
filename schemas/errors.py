"""The one error root of orgseed.

Every error carries typed fields (declared on its class, so mypy sees them) and a message that says where the
problem is and what to do next. `Terminal` errors will fail again if retried; `Transient` ones may succeed on a
retry, so retry policies key off the type, never off message text. `exit_code` is what the CLI exits with: 2
for bad input (the input or the configuration must change), 1 for problems found in the data or a service that
failed (the README's exit codes).
"""

from __future__ import annotations

from typing import Any, ClassVar, TypedDict, Unpack


class Where(TypedDict, total=False):
    """The location fields of OrgseedError, for subclasses that pass them on (`**where: Unpack[Where]`)."""

    file: str | None
    line: int | None
    pointer: str | None
    sobject: str | None
    field: str | None


def _restore(cls: type[OrgseedError], args: tuple[Any, ...]) -> OrgseedError:
    """Unpickle an error without calling its (subclass-specific) __init__; `__dict__` is restored after."""
    exc = cls.__new__(cls)
    Exception.__init__(exc, *args)
    return exc


class OrgseedError(Exception):
    """Root of every orgseed error.

    The location fields every error may carry are keyword arguments here; subclasses add their own typed
    fields the same way. `fields` lists the structured fields that are set (for reports and tests).
    """

    exit_code: ClassVar[int] = 1
    FIELDS: ClassVar[tuple[str, ...]] = ("file", "line", "pointer", "sobject", "field")

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        pointer: str | None = None,
        sobject: str | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.pointer = pointer
        self.sobject = sobject
        self.field = field

    @property
    def fields(self) -> dict[str, Any]:
        """The structured fields that are set, by name (every class's FIELDS along the MRO)."""
        names = dict.fromkeys(n for c in reversed(type(self).__mro__) for n in c.__dict__.get("FIELDS", ()))
        return {n: getattr(self, n) for n in names if getattr(self, n, None) is not None}

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        # Errors cross process boundaries (Dask workers): keep every field whatever the subclass's __init__.
        return (_restore, (type(self), self.args), self.__dict__)


class Terminal(OrgseedError):
    """Retrying will not help: the input or the configuration must change."""

    exit_code: ClassVar[int] = 2


class Transient(OrgseedError):
    """A passing condition (network, rate limit, lock); a retry may succeed."""


class ModelError(Terminal):
    """An object schema in `schemas/objects/` is malformed (names the file and JSON pointer)."""


class ProfileError(Terminal):
    """A profile is malformed or inconsistent (names the file and, where known, the line)."""

    FIELDS: ClassVar[tuple[str, ...]] = ("profile", "key")

    def __init__(
        self, message: str, *, profile: str | None = None, key: str | None = None, **where: Unpack[Where]
    ):
        super().__init__(message, **where)
        self.profile = profile
        self.key = key


class UsageError(Terminal):
    """A command was called with arguments that cannot work."""

    FIELDS: ClassVar[tuple[str, ...]] = ("path", "task")

    def __init__(
        self, message: str, *, path: str | None = None, task: str | None = None, **where: Unpack[Where]
    ):
        super().__init__(message, **where)
        self.path = path
        self.task = task


class DataFindings(Terminal):
    """The work ran and found problems in the data (validation errors, answers that disagree): exit 1."""

    exit_code: ClassVar[int] = 1


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
