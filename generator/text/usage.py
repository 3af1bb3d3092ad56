"""Token, request and cost accounting of the LLM writer, and `reports/llm_usage.json`.

Each writer (one per process) keeps a `Usage` and saves a snapshot after every batch to its own file in
the run's usage folder; the build merges the snapshots of every process into the report. Costs come from
an editable price table (`prices.toml`, or the file named by `ORGSEED_PRICES`).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

from schemas.errors import Terminal

COUNTERS = (
    "records",  # records written by the writer (or, in a dry run, that would be)
    "requests",  # requests answered by the endpoint (billed)
    "cache_hits",  # answers replayed from the cache (free)
    "prompt_tokens",
    "completion_tokens",
    "cached_prompt_tokens",  # tokens of the replayed answers, not billed again
    "cached_completion_tokens",
    "repairs",  # follow-up requests after a reply failed its format or content checks
    "regenerations",  # records asked for again in other words, as near-duplicates (the pipeline's rewrites)
    "failed",  # records that still failed after every attempt
    "filled",  # failed records filled by the offline writer (--fallback offline)
    "estimated_requests",  # dry run: first requests not in the cache
    "estimated_prompt_tokens",
    "estimated_completion_tokens",
)
ERRORS = (
    "rate_limited",  # 429 responses
    "server_errors",  # 5xx responses
    "timeouts",
    "connection_errors",  # refused, reset, or closed before the answer was whole
    "bad_answers",  # 200s whose body is not a chat completion (cut JSON, an HTML page, an error envelope)
    "format_downgrades",  # json_schema → json_object → text
)
MAX_FAILURES_LISTED = 200


class PriceError(Terminal):
    """The price table cannot be read."""

    FIELDS: ClassVar[tuple[str, ...]] = ("path",)

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


@dataclass
class Usage:
    model: str
    endpoint: str
    dry_run: bool = False
    kinds: dict[str, dict[str, int]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ERRORS, 0))
    failures: list[dict[str, Any]] = field(default_factory=list)

    def add(self, kind: str, **counts: int) -> None:
        row = self.kinds.setdefault(kind, dict.fromkeys(COUNTERS, 0))
        for name, n in counts.items():
            row[name] += int(n)

    def error(self, name: str) -> None:
        self.errors[name] = self.errors.get(name, 0) + 1

    def snapshot(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "endpoint": self.endpoint,
            "dry_run": self.dry_run,
            "kinds": {k: dict(v) for k, v in sorted(self.kinds.items())},
            "errors": dict(self.errors),
            "failures": list(self.failures),
        }

    def save(self, folder: Path, name: str) -> None:
        """Write the snapshot to `folder/name.json` atomically (tmp + replace)."""
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.json.tmp"
        tmp.write_text(json.dumps(self.snapshot(), sort_keys=True, indent=1))
        os.replace(tmp, folder / f"{name}.json")


def load_snapshots(folder: Path) -> list[dict[str, Any]]:
    if not folder.is_dir():
        return []
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


# -- prices ------------------------------------------------------------------------------------------------


def load_prices(path: str | Path | None = None) -> tuple[dict[str, dict[str, float]], str]:
    """The price table and where it came from (argument, $ORGSEED_PRICES, or the packaged file)."""
    source = path or os.environ.get("ORGSEED_PRICES")
    try:
        if source:
            text = Path(source).expanduser().read_text()
            where = str(source)
        else:
            text = (resources.files("generator.text") / "prices.toml").read_text()
            where = "generator/text/prices.toml"
        data = tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise PriceError(
            f"Cannot read the LLM price table {source or 'generator/text/prices.toml'}: {exc}. "
            "Fix the file or unset ORGSEED_PRICES.",
            path=str(source),
        ) from exc
    models = {}
    for name, entry in dict(data.get("models", {})).items():
        try:
            models[str(name)] = {"input": float(entry["input"]), "output": float(entry["output"])}
        except (KeyError, TypeError, ValueError) as exc:
            raise PriceError(
                f"{where}: model `{name}` needs numeric `input` and `output` prices (USD per million tokens).",
                path=where,
            ) from exc
    return models, where


def price_for(
    model: str, prices: Mapping[str, Mapping[str, float]]
) -> tuple[str, Mapping[str, float]] | None:
    """The price entry of `model`: exact name, else the longest listed name it starts with."""
    if model in prices:
        return model, prices[model]
    matches = [name for name in prices if model.startswith(name)]
    if not matches:
        return None
    best = max(matches, key=len)
    return best, prices[best]


def cost(prompt_tokens: int, completion_tokens: int, price: Mapping[str, float] | None) -> float | None:
    if price is None:
        return None
    return round((prompt_tokens * price["input"] + completion_tokens * price["output"]) / 1_000_000, 6)


# -- the report --------------------------------------------------------------------------------------------


def _sum_rows(rows: Iterable[Mapping[str, int]]) -> dict[str, int]:
    out = dict.fromkeys(COUNTERS, 0)
    for row in rows:
        for k in COUNTERS:
            out[k] += int(row.get(k, 0))
    return out


def _derived(row: dict[str, Any], price: Mapping[str, float] | None, dry_run: bool) -> dict[str, Any]:
    answers = row["requests"] + row["cache_hits"]
    row["cache_hit_rate"] = round(row["cache_hits"] / answers, 4) if answers else None
    tokens = (
        row["prompt_tokens"]
        + row["completion_tokens"]
        + row["cached_prompt_tokens"]
        + row["cached_completion_tokens"]
    )
    row["tokens_per_record"] = round(tokens / row["records"], 1) if row["records"] and not dry_run else None
    if dry_run:
        row["estimated_cost_usd"] = cost(
            row["estimated_prompt_tokens"], row["estimated_completion_tokens"], price
        )
    row["cost_usd"] = cost(row["prompt_tokens"], row["completion_tokens"], price)
    return row


def build_report(
    snapshots: list[dict[str, Any]], writer: str = "openai", prices_path: str | Path | None = None
) -> dict[str, Any]:
    """Merge per-process snapshots into the usage report (per model, per text kind, totals, cost)."""
    prices, price_source = load_prices(prices_path)
    dry_run = any(s.get("dry_run") for s in snapshots)
    by_model: dict[str, dict[str, Any]] = {}
    errors = dict.fromkeys(ERRORS, 0)
    failures: list[dict[str, Any]] = []
    for snap in snapshots:
        m = by_model.setdefault(snap["model"], {"endpoints": set(), "kinds": {}})
        m["endpoints"].add(snap["endpoint"])
        for kind, row in snap["kinds"].items():
            m["kinds"].setdefault(kind, []).append(row)
        for k, v in snap.get("errors", {}).items():
            errors[k] = errors.get(k, 0) + int(v)
        failures.extend(snap.get("failures", []))
    models: dict[str, Any] = {}
    all_rows: list[dict[str, int]] = []
    unpriced = []
    for model, m in sorted(by_model.items()):
        match = price_for(model, prices)
        price = match[1] if match else None
        if match is None:
            unpriced.append(model)
        kinds = {kind: _derived(_sum_rows(rows), price, dry_run) for kind, rows in sorted(m["kinds"].items())}
        total = _sum_rows(kinds.values())
        all_rows.append(total)
        models[model] = {
            "endpoints": sorted(m["endpoints"]),
            "price_per_million": (
                {"model": match[0], "input": match[1]["input"], "output": match[1]["output"]}
                if match
                else None
            ),
            "kinds": kinds,
            "totals": _derived(total, price, dry_run),
        }
    totals: dict[str, Any] = _derived(dict(_sum_rows(all_rows)), None, dry_run)
    costs = [mm["totals"]["cost_usd"] for mm in models.values()]
    totals["cost_usd"] = None if any(c is None for c in costs) else round(sum(c for c in costs if c), 6)
    if dry_run:
        est = [mm["totals"]["estimated_cost_usd"] for mm in models.values()]
        totals["estimated_cost_usd"] = (
            None if any(c is None for c in est) else round(sum(c for c in est if c), 6)
        )
    failures.sort(key=lambda f: (f["kind"], f["key"]))
    report: dict[str, Any] = {
        "writer": writer,
        "dry_run": dry_run,
        "prices": price_source,
        "models": models,
        "totals": totals,
        "errors": errors,
        "failed_records": len(failures),
        "filled_by_offline": sum(1 for f in failures if f.get("filled")),
        "failures": failures[:MAX_FAILURES_LISTED],
    }
    if unpriced:
        report["note"] = (
            f"No price for {', '.join(unpriced)} in {price_source}: add it there (or to the file named by "
            "ORGSEED_PRICES) to get costs."
        )
    return report
