"""A build's settings: one frozen, typed `BuildOptions`, every default defined once.

The LLM writer's defaults are `LLMSettings`' own (generator/text/llm.py); the CLI's defaults read them from
here. Closed sets are `Literal` types, checked by `flows.build.check_options`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Literal, get_args

from generator.text.llm import LLMSettings

Engine = Literal["prefect", "local"]
Runner = Literal["threads", "dask"]
AnswerFormat = Literal["scalar", "list"]
ENGINES: tuple[Engine, ...] = get_args(Engine)
RUNNERS: tuple[Runner, ...] = get_args(Runner)
ANSWER_FORMATS: tuple[AnswerFormat, ...] = get_args(AnswerFormat)

_LLM_DEFAULTS = {f.name: f.default for f in fields(LLMSettings)}
DEFAULT_CONCURRENCY: int = _LLM_DEFAULTS["concurrency"]  # type: ignore[assignment]
DEFAULT_MAX_STALL_SECONDS: float = _LLM_DEFAULTS["max_stall_seconds"]  # type: ignore[assignment]
DEFAULT_REQUEST_TIMEOUT: float = _LLM_DEFAULTS["request_timeout"]  # type: ignore[assignment]


@dataclass(frozen=True)
class BuildOptions:
    profile: str = "crmarena"
    scale: float = 1.0
    seed: int = 0
    out: str | None = None
    shards: int = 1
    force: bool = False
    resume: bool = False  # continue the staged build of --out from the stages it finished
    writer: str = "offline"  # a name in the writer registry (generator/text/writers.py)
    engine: Engine = "prefect"
    runner: Runner = "threads"
    dask_address: str | None = None
    per_task: int | None = None  # default: the profile's [tasks] per_task (130 for crmarena)
    answer_format: AnswerFormat = "scalar"
    # The LLM writer (--writer openai); see flows/writer.py and generator/text/llm.py.
    model: str | None = None
    base_url: str | None = None
    cache: str | None = None
    no_cache: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    rpm: int | None = None
    tpm: int | None = None
    dry_run: bool = False
    fallback: str | None = None
    max_stall_seconds: float = DEFAULT_MAX_STALL_SECONDS
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT

    def output(self) -> Path:
        if self.out:
            return Path(self.out)
        name = Path(self.profile).stem if self.profile.endswith(".toml") else self.profile
        return Path("output") / name
