"""The progress display of the build running in this context (a context variable, not a module global).

The Prefect flow reads it here rather than taking it as a parameter (Prefect records parameters); it lives in
its own module so the flow, which Prefect may pickle by value for Dask workers, refers to it by reference.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from generator.pipeline import Progress

_PROGRESS: ContextVar[Progress | None] = ContextVar("orgseed_build_progress", default=None)


def current_progress() -> Progress | None:
    return _PROGRESS.get()


@contextmanager
def showing(progress: Progress | None) -> Iterator[None]:
    """Make `progress` the current display for the duration of the block."""
    token = _PROGRESS.set(progress)
    try:
        yield
    finally:
        _PROGRESS.reset(token)
