"""Which writer a run uses: the factory `generator.pipeline.set_writer_factory` receives.

`RunSpec.writer` names the writer; `RunSpec.writer_options` carries the LLM writer's settings (never the API
key, which each process reads from its own environment), so a worker process builds the same writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from generator.text.base import TextWriter
from generator.text.offline import OfflineWriter
from schemas.errors import UsageError, did_you_mean

if TYPE_CHECKING:
    from generator.pipeline import RunSpec
    from schemas.profile import Profile

WRITERS = ("offline", "openai")


def make_writer(run: RunSpec, profile: Profile) -> TextWriter:
    if run.writer == "offline":
        return OfflineWriter(run.seed, profile.company.name)
    if run.writer == "openai":
        from generator.text.llm import LLMSettings, LLMWriter
        from generator.text.render import PromptEnv

        return LLMWriter(
            LLMSettings.from_options(run.writer_options), run.seed, PromptEnv.from_profile(profile)
        )
    raise UsageError(
        f"Unknown --writer `{run.writer}`; available: {', '.join(WRITERS)}.{did_you_mean(run.writer, WRITERS)}"
    )
