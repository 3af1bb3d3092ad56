"""The writer registry: orgseed's writers come from its `orgseed.writers` entry points, and a plug-in
package's writer (an entry point in its own metadata) is found by name and used by a build."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.options import BuildOptions
from flows.writer import check_writer_options, manifest_entry
from generator.text import writers
from generator.text.llm import LLMSettings, LLMWriter
from generator.text.offline import OfflineWriter
from schemas.errors import UsageError
from tests.conftest import REPO, SMALL_PROFILE, build_local
from tests.text.plugin_writer import UpperOfflineWriter


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An installed distribution (a .dist-info on sys.path) registering `plug` in orgseed.writers."""
    info = tmp_path / "site" / "orgseed_plug-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: orgseed-plug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[orgseed.writers]\nplug = tests.text.plugin_writer:UpperOfflineWriter\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    writers._entry_points.cache_clear()
    yield "plug"
    writers._entry_points.cache_clear()


def test_the_builtin_writers_are_the_entry_points_in_pyproject() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"][
        "orgseed.writers"
    ]
    assert declared == {
        "offline": "generator.text.offline:OfflineWriter",
        "openai": "generator.text.llm:LLMWriter",
    }
    assert {"offline", "openai"} <= set(writers.writer_names())  # the installed metadata has them
    assert writers.writer_class("offline") is OfflineWriter
    assert writers.writer_class("openai") is LLMWriter


def test_an_unknown_writer_names_the_registered_ones() -> None:
    with pytest.raises(
        UsageError, match=r"Unknown --writer `ofline`; available: .*offline.* Did you mean `offline`"
    ):
        check_writer_options(BuildOptions(writer="ofline"))


def test_a_plugin_writer_is_found_and_builds_the_same_data(
    plugin: str, tmp_path: Path, small_bundle: Path
) -> None:
    assert plugin in writers.writer_names()
    assert writers.writer_class(plugin) is UpperOfflineWriter
    assert manifest_entry(BuildOptions(writer=plugin)) == {"name": plugin}
    with pytest.raises(UsageError, match="--model only apply to the LLM writer"):
        check_writer_options(BuildOptions(writer=plugin, llm=LLMSettings(model="m")))
    UpperOfflineWriter.calls.clear()
    out = build_local(tmp_path / "plugged", SMALL_PROFILE, writer=plugin)
    assert sum(UpperOfflineWriter.calls) > 0  # the build asked the plug-in for its texts
    manifest = json.loads((out / "manifest.json").read_text())
    reference = json.loads((small_bundle / "manifest.json").read_text())
    assert manifest["writer"] == {"name": plugin}
    assert (
        manifest["data_sha256"] == reference["data_sha256"]
    )  # the same texts as the offline writer it wraps
