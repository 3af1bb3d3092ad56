"""BuildOptions: frozen, one nested frozen LLMSettings, and a lossless trip through a Prefect flow's parameters."""

from __future__ import annotations

import dataclasses
from dataclasses import asdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flows.options import NO_LLM, BuildOptions
from generator.text.llm import LLMSettings


@given(
    seed=st.integers(0, 2**63 - 1),
    scale=st.floats(0.01, 1000, allow_nan=False),
    model=st.text(max_size=20),
    concurrency=st.integers(1, 64),
    rpm=st.none() | st.integers(1, 10_000),
    use_cache=st.booleans(),
)
def test_options_survive_the_trip_to_a_flow_run(
    seed: int, scale: float, model: str, concurrency: int, rpm: int | None, use_cache: bool
) -> None:
    llm = LLMSettings(model=model, concurrency=concurrency, rpm=rpm, use_cache=use_cache)
    opts = BuildOptions(seed=seed, scale=scale, writer="openai", llm=llm)
    back = BuildOptions.from_dict(asdict(opts))
    assert back == opts and isinstance(back.llm, LLMSettings)


def test_options_are_frozen_and_llm_defaults_are_llmsettings_own() -> None:
    opts = BuildOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.seed = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.llm.concurrency = 3  # type: ignore[misc]
    defaults = {f.name: f.default for f in dataclasses.fields(LLMSettings) if f.name != "model"}
    assert {k: getattr(opts.llm, k) for k in defaults} == defaults and opts.llm == NO_LLM
