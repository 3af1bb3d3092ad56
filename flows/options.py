"""A build's settings: one frozen, typed `BuildOptions`, every default defined once.

The LLM writer's settings are a frozen `LLMSettings` (generator/text/llm.py) nested in `BuildOptions.llm`, with
its own defaults (the CLI's defaults read them from here); `NO_LLM` is the value when no LLM option is given
(its empty `model` means "none chosen"). Closed sets are `Literal` types, checked by
`flows.build.check_options`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from generator.text.llm import LLMSettings
from orgs.bundle import PART_BYTES

Engine = Literal["prefect", "local"]
Runner = Literal["threads", "dask"]
AnswerFormat = Literal["scalar", "list"]
ENGINES: tuple[Engine, ...] = get_args(Engine)
RUNNERS: tuple[Runner, ...] = get_args(Runner)
ANSWER_FORMATS: tuple[AnswerFormat, ...] = get_args(AnswerFormat)

NO_LLM = LLMSettings(model="")  # every LLM option at its default, no model chosen
DEFAULT_CONCURRENCY = NO_LLM.concurrency
DEFAULT_MAX_STALL_SECONDS = NO_LLM.max_stall_seconds
DEFAULT_REQUEST_TIMEOUT = NO_LLM.request_timeout


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
    dask_memory_limit: str | None = None  # per worker of the local cluster, as Dask reads it ("2GiB")
    per_task: int | None = None  # default: the profile's [tasks] per_task (130 for crmarena)
    answer_format: AnswerFormat = "scalar"
    part_bytes: int = PART_BYTES  # an object's CSV larger than this is written in parts (orgs/bundle.py)
    sidecar: bool | None = None  # a second process for the remote stages (flows/sidecar.py); None: by cores
    # The LLM writer (--writer openai); see flows/writer.py and generator/text/llm.py.
    llm: LLMSettings = field(default=NO_LLM)

    @staticmethod
    def from_dict(options: dict[str, Any]) -> BuildOptions:
        """The inverse of `dataclasses.asdict` (how the options travel to a Prefect flow run)."""
        given = dict(options)
        llm = given.pop("llm", None)
        if isinstance(llm, dict):
            given["llm"] = LLMSettings.from_options(llm)
        elif llm is not None:
            given["llm"] = llm
        return BuildOptions(**given)

    def output(self) -> Path:
        if self.out:
            return Path(self.out)
        name = Path(self.profile).stem if self.profile.endswith(".toml") else self.profile
        return Path("output") / name
