"""The build's side of the text writers: option checks, run options, manifest entry, usage report, dry run.

Kept out of `flows/build.py` so the build stays about stages; `build.py` calls these few functions.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flows.options import (
    NO_LLM,
    BuildOptions,
)
from generator.pipeline import WORK_DIR
from generator.text.llm import FALLBACKS, LLMSettings, endpoint_host, resolve_api_key
from generator.text.usage import build_report, load_snapshots
from generator.text.writers import writer_class
from orgs.bundle import Bundle
from schemas.errors import UsageError

USAGE_REPORT = "reports/llm_usage.json"
USAGE_DIR = "llm-usage"
MAX_REQUEST_TIMEOUT = 3600.0
MANIFEST_TOTALS = ("records", "requests", "cache_hits", "prompt_tokens", "completion_tokens", "cost_usd")
# The CLI flag of each LLM writer setting a user sets (the others are internal or set here).
LLM_FLAGS = {
    "model": "--model",
    "base_url": "--base-url",
    "cache": "--cache",
    "use_cache": "--no-cache",
    "concurrency": "--concurrency",
    "rpm": "--rpm",
    "tpm": "--tpm",
    "dry_run": "--dry-run",
    "fallback": "--fallback",
    "max_stall_seconds": "--max-stall-seconds",
    "request_timeout": "--request-timeout",
}


def check_writer_options(opts: BuildOptions) -> None:
    llm = opts.llm
    if not writer_class(opts.writer).takes_llm_settings:
        given = [flag for name, flag in LLM_FLAGS.items() if getattr(llm, name) != getattr(NO_LLM, name)]
        if given:
            raise UsageError(f"{', '.join(given)} only apply to the LLM writer; add --writer openai.")
        return
    if not llm.model:
        raise UsageError(
            f"--writer {opts.writer} needs --model, e.g. --model gpt-4o-mini (or the model your server serves)."
        )
    if llm.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1 (got {llm.concurrency}).")
    for flag, value in (("--rpm", llm.rpm), ("--tpm", llm.tpm)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be at least 1 (got {value}); leave it out for no limit.")
    if not llm.max_stall_seconds > 0:
        raise UsageError(f"--max-stall-seconds must be positive (got {llm.max_stall_seconds}).")
    if not 0 < llm.request_timeout <= MAX_REQUEST_TIMEOUT:
        raise UsageError(
            f"--request-timeout must be more than 0 and at most {MAX_REQUEST_TIMEOUT:g} seconds (got "
            f"{llm.request_timeout:g}); it bounds each wait of a request: connecting, sending, each read."
        )
    if llm.fallback is not None and llm.fallback not in FALLBACKS:
        raise UsageError(f"--fallback must be `offline` (got `{llm.fallback}`).")
    if llm.base_url:
        parts = urlsplit(llm.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"--base-url must be an http(s) URL such as http://localhost:8000/v1 (got `{llm.base_url}`)."
            )
    elif not llm.dry_run and resolve_api_key() is None:
        raise UsageError(
            "--writer openai without --base-url talks to OpenAI and needs a key: set OPENAI_API_KEY or put "
            "`OPENAI_API_KEY=...` in a .env file (or use --dry-run to estimate without one)."
        )
    from generator.text.usage import load_prices

    load_prices()  # a broken price table fails now, not after the texts are written
    if llm.use_cache:
        from generator.text.cache import ResponseCache

        settings = _settings(opts, None)
        ResponseCache(settings.cache_path()).close()


def _settings(opts: BuildOptions, root: Path | None) -> LLMSettings:
    """The writer's settings for this build: the options' own, with the run's usage folder and, on a Dask
    cluster, the name under which its workers share --concurrency, --rpm and --tpm (generator/text/shared.py)."""
    usage_dir = str(root / WORK_DIR / USAGE_DIR) if root is not None else None
    shared = None
    if root is not None and opts.engine == "prefect" and opts.runner == "dask":
        shared = (
            f"orgseed-llm-{uuid.uuid4().hex[:16]}"  # this run's; another build on the cluster has its own
        )
    return replace(opts.llm, usage_dir=usage_dir, shared_limits=shared)


def run_options(opts: BuildOptions, root: Path) -> tuple[tuple[str, Any], ...]:
    """`RunSpec.writer_options` for this build (no secrets)."""
    if not writer_class(opts.writer).takes_llm_settings:
        return ()
    return _settings(opts, root.resolve()).options()


def manifest_entry(opts: BuildOptions) -> dict[str, Any]:
    if not writer_class(opts.writer).takes_llm_settings:
        return {"name": opts.writer}
    return {
        "name": opts.writer,
        "model": opts.llm.model,
        "base_url_host": endpoint_host(opts.llm.base_url),
        "cache": opts.llm.use_cache,
        "fallback": opts.llm.fallback,
    }


def write_usage_report(bundle: Bundle, opts: BuildOptions) -> tuple[dict[str, Any], str, str] | None:
    """Merge the writers' snapshots into reports/llm_usage.json; (report, path, sha256) or None."""
    if not writer_class(opts.writer).takes_llm_settings:
        return None
    snapshots = load_snapshots(bundle.root / WORK_DIR / USAGE_DIR)
    if not snapshots:
        return None
    report = build_report(snapshots, writer=opts.writer)
    entry = bundle.write_json(USAGE_REPORT, report)
    return report, entry.path, entry.sha256
