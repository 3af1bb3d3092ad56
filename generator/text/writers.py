"""The text-writer registry: a writer is one `TextWriter` class registered under a name.

Writers are Python entry points in the group `orgseed.writers` (orgseed's own, `offline` and `openai`, are
declared in its pyproject.toml), so a plug-in package adds one with an entry in its own metadata:

    [project.entry-points."orgseed.writers"]
    mywriter = "mypackage.writer:MyWriter"

The CLI (`--writer`), the options check and the flows read this registry; none names a writer itself.
`RunSpec.writer` names the writer; `RunSpec.writer_options` carries its settings (for the LLM writer never
the API key, which each process reads from its own environment), so a worker process builds the same writer.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING

from generator.text.base import TextWriter
from schemas.errors import UsageError, did_you_mean

if TYPE_CHECKING:
    from generator.pipeline import RunSpec
    from schemas.profile import Profile

ENTRY_POINT_GROUP = "orgseed.writers"


@cache
def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)}


def writer_names() -> tuple[str, ...]:
    """The registered writers' names, sorted."""
    return tuple(_entry_points())


def writer_class(name: str) -> type[TextWriter]:
    """The writer class registered as `name`; a UsageError naming the choices when there is none."""
    found = _entry_points().get(name)
    if found is None:
        names = writer_names()
        hint = (
            f"available: {', '.join(names)}.{did_you_mean(name, names)}"
            if names
            else "none is registered: reinstall orgseed (`make .venv/.installed` or `pip install -e .`) so its "
            f"`{ENTRY_POINT_GROUP}` entry points are installed."
        )
        raise UsageError(f"Unknown --writer `{name}`; {hint}")
    cls = found.load()
    if not (isinstance(cls, type) and issubclass(cls, TextWriter)):
        raise UsageError(
            f"The `{ENTRY_POINT_GROUP}` entry point `{name}` ({found.value}) is not a TextWriter class; fix the "
            "package that registers it."
        )
    return cls


def make_writer(run: RunSpec, profile: Profile) -> TextWriter:
    return writer_class(run.writer).for_run(run.seed, profile, run.writer_options)
