"""The build's side of the text writers: option checks, run options, manifest entry, usage report, dry run.

Kept out of `flows/build.py` so the build stays about stages; `build.py` calls these few functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flows.options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_STALL_SECONDS,
    DEFAULT_REQUEST_TIMEOUT,
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
# Options that only mean something for the LLM writer, with their CLI flags and defaults.
LLM_ONLY = {
    "model": ("--model", None),
    "base_url": ("--base-url", None),
    "cache": ("--cache", None),
    "no_cache": ("--no-cache", False),
    "concurrency": ("--concurrency", DEFAULT_CONCURRENCY),
    "rpm": ("--rpm", None),
    "tpm": ("--tpm", None),
    "dry_run": ("--dry-run", False),
    "fallback": ("--fallback", None),
    "max_stall_seconds": ("--max-stall-seconds", DEFAULT_MAX_STALL_SECONDS),
    "request_timeout": ("--request-timeout", DEFAULT_REQUEST_TIMEOUT),
}


def check_writer_options(opts: BuildOptions) -> None:
    if not writer_class(opts.writer).takes_llm_settings:
        given = [flag for name, (flag, default) in LLM_ONLY.items() if getattr(opts, name) != default]
        if given:
            raise UsageError(f"{', '.join(given)} only apply to the LLM writer; add --writer openai.")
        return
    if not opts.model:
        raise UsageError(
            f"--writer {opts.writer} needs --model, e.g. --model gpt-4o-mini (or the model your server serves)."
        )
    if opts.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1 (got {opts.concurrency}).")
    for flag, value in (("--rpm", opts.rpm), ("--tpm", opts.tpm)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be at least 1 (got {value}); leave it out for no limit.")
    if not opts.max_stall_seconds > 0:
        raise UsageError(f"--max-stall-seconds must be positive (got {opts.max_stall_seconds}).")
    if not 0 < opts.request_timeout <= MAX_REQUEST_TIMEOUT:
        raise UsageError(
            f"--request-timeout must be more than 0 and at most {MAX_REQUEST_TIMEOUT:g} seconds (got "
            f"{opts.request_timeout:g}); it bounds each wait of a request: connecting, sending, each read."
        )
    if opts.fallback is not None and opts.fallback not in FALLBACKS:
        raise UsageError(f"--fallback must be `offline` (got `{opts.fallback}`).")
    if opts.base_url:
        parts = urlsplit(opts.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"--base-url must be an http(s) URL such as http://localhost:8000/v1 (got `{opts.base_url}`)."
            )
    elif not opts.dry_run and resolve_api_key() is None:
        raise UsageError(
            "--writer openai without --base-url talks to OpenAI and needs a key: set OPENAI_API_KEY or put "
            "`OPENAI_API_KEY=...` in a .env file (or use --dry-run to estimate without one)."
        )
    from generator.text.usage import load_prices

    load_prices()  # a broken price table fails now, not after the texts are written
    if not opts.no_cache:
        from generator.text.cache import ResponseCache

        settings = _settings(opts, None)
        ResponseCache(settings.cache_path()).close()


def _settings(opts: BuildOptions, root: Path | None) -> LLMSettings:
    assert opts.model
    return LLMSettings(
        model=opts.model,
        base_url=opts.base_url,
        cache=opts.cache,
        use_cache=not opts.no_cache,
        concurrency=opts.concurrency,
        rpm=opts.rpm,
        tpm=opts.tpm,
        max_stall_seconds=float(opts.max_stall_seconds),
        request_timeout=float(opts.request_timeout),
        fallback=opts.fallback,
        dry_run=opts.dry_run,
        usage_dir=str(root / WORK_DIR / USAGE_DIR) if root is not None else None,
    )


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
        "model": opts.model,
        "base_url_host": endpoint_host(opts.base_url),
        "cache": not opts.no_cache,
        "fallback": opts.fallback,
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
