"""The Dask engine: a small org built on a two-worker local Dask cluster with a memory limit per worker is
byte-identical to the threads runner's build and to a one-shard build."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flows.build import check_options
from flows.options import BuildOptions
from flows.run import run_build
from schemas.errors import UsageError
from tests.conftest import SMALL_PROFILE


def _build(out: Path, **options: Any) -> dict[str, Any]:
    opts = BuildOptions(profile=str(SMALL_PROFILE), out=str(out), force=True, **options)
    return run_build(opts).manifest


def test_two_memory_limited_dask_workers_build_the_same_bundle_as_threads_and_one_shard(
    tmp_path: Path, small_bundle: Path
) -> None:
    one_shard = json.loads((small_bundle / "manifest.json").read_text())  # in-process, --shards 1
    threads = _build(tmp_path / "threads", shards=2)
    dask = _build(tmp_path / "dask", shards=2, runner="dask", dask_memory_limit="1GiB")
    assert dask["build"]["runner"] == "dask"
    assert threads["build"]["runner"] == "threads"
    assert dask["data_sha256"] == threads["data_sha256"] == one_shard["data_sha256"]
    assert dask["files"] == threads["files"] == one_shard["files"]  # latent/ and tasks/ too


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"runner": "dask", "dask_memory_limit": "lots"}, "at least 256MiB"),
        ({"runner": "dask", "dask_memory_limit": ""}, "at least 256MiB"),
        ({"runner": "dask", "dask_memory_limit": "10MB"}, "at least 256MiB"),
        ({"runner": "threads", "dask_memory_limit": "2GiB"}, "with --runner dask"),
        ({"runner": "dask", "dask_address": "tcp://127.0.0.1:1", "dask_memory_limit": "2GiB"}, "dask worker"),
    ],
)
def test_a_bad_memory_limit_is_refused_before_anything_runs(options: dict[str, Any], words: str) -> None:
    with pytest.raises(UsageError, match="--dask-memory-limit") as err:
        check_options(BuildOptions(**options))
    assert words in str(err.value)
