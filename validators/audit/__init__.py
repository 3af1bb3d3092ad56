"""`orgseed audit`: how good a bundle's data is, as `reports/audit.json` and a page, `reports/audit.html`.

`run_audit(root, against=None)` computes every section of `validators/audit/figures.py` (integrity and
cardinality, distributions, latent → observed, text, tasks, LLM cost) and, with `against`, the same for another
bundle with every scalar figure side by side. With `org` (a simple-salesforce client), a live-org section compares the org with the bundle
(`validators/audit/org.py`). `render_page(report)` renders the self-contained page (plots as
inline SVG, no script, no network); `write_audit` writes both files atomically. `schemas/reports/audit.schema.json`
is the JSON Schema of `audit.json`.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from orgs.bundle import Bundle, require_complete
from schemas.model import SCHEMA_DIR
from validators.audit.figures import SECTIONS, AuditData
from validators.audit.org import live_org
from validators.audit.page import render_page
from validators.audit.plots import PLOTS

AUDIT_JSON = "reports/audit.json"
AUDIT_HTML = "reports/audit.html"
SCHEMA = SCHEMA_DIR / "reports" / "audit.schema.json"
FORMAT = "orgseed-audit/1"
VERDICT_ORDER = {"ok": 0, "warn": 1, "fail": 2}


def _sections(root: Path) -> dict[str, dict[str, Any]]:
    data = AuditData(root)
    out = {}
    for key, title, fn in SECTIONS:
        section = fn(data)
        out[key] = {"title": title, **section}
    return out


def _scalars(value: Any, prefix: str = "") -> dict[str, float]:
    """Every number under `value` by JSON pointer, skipping point clouds and long lists."""
    out: dict[str, float] = {}
    if isinstance(value, bool):
        return out
    if isinstance(value, int | float):
        if math.isfinite(float(value)):
            out[prefix] = float(value)
        return out
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "points":
                continue
            out.update(_scalars(v, f"{prefix}/{str(k).replace('~', '~0').replace('/', '~1')}"))
    elif isinstance(value, list) and len(value) <= 64:
        for i, v in enumerate(value):
            out.update(_scalars(v, f"{prefix}/{_label(v, i)}"))
    return out


def _label(value: Any, index: int) -> str:
    """A list item's name in a figure's path: its name, task or object.field, else its position."""
    if isinstance(value, dict):
        for key in ("name", "task"):
            if value.get(key):
                return str(value[key])
        if "field" in value:
            return f"{value.get('child', value.get('object'))}.{value['field']}"
    return str(index)


def compare(mine: dict[str, Any], theirs: dict[str, Any]) -> list[dict[str, Any]]:
    """Every scalar figure of both audits, side by side, with its difference (the figures that differ first)."""
    rows = []
    for key in mine:
        a = _scalars(mine[key]["figures"], f"/{key}")
        b = _scalars(theirs.get(key, {}).get("figures", {}), f"/{key}")
        for path in sorted(set(a) | set(b)):
            x, y = a.get(path), b.get(path)
            diff = None if x is None or y is None else round(x - y, 6)
            rows.append({"figure": path, "this": x, "other": y, "difference": diff})
    rows.sort(key=lambda r: (r["difference"] in (0, 0.0), r["figure"]))
    return rows


def run_audit(
    root: Path | str, against: Path | str | None = None, org: Any = None, id_map: Path | None = None
) -> dict[str, Any]:
    """The audit of the bundle at `root` (and its comparison with `against`; with `org`, a simple-salesforce
    client, the live org against the bundle). BundleError (exit 2) when a bundle is not a complete orgseed
    bundle."""
    started = time.perf_counter()
    root = Path(root)
    manifest = require_complete(root)
    other_manifest = require_complete(Path(against)) if against is not None else None
    sections = _sections(root)
    if org is not None:
        sections["org"] = live_org(root, org, id_map, seed=int(manifest.get("seed", 0)))
    report: dict[str, Any] = {
        "format": FORMAT,
        "bundle": {
            "path": str(root),
            "profile": (manifest.get("profile") or {}).get("name"),
            "seed": manifest.get("seed"),
            "scale": manifest.get("scale"),
            "writer": (manifest.get("writer") or {}).get("name"),
            "data_sha256": manifest.get("data_sha256"),
        },
        "verdict": max((s["verdict"] for s in sections.values()), key=VERDICT_ORDER.__getitem__),
        "sections": sections,
    }
    if against is not None and other_manifest is not None:
        theirs = _sections(Path(against))
        report["against"] = {
            "bundle": {
                "path": str(against),
                "profile": (other_manifest.get("profile") or {}).get("name"),
                "seed": other_manifest.get("seed"),
                "scale": other_manifest.get("scale"),
                "writer": (other_manifest.get("writer") or {}).get("name"),
                "data_sha256": other_manifest.get("data_sha256"),
            },
            "sections": theirs,
            "figures": compare(sections, theirs),
        }
    report["seconds"] = round(time.perf_counter() - started, 3)
    return report


def plots(report: dict[str, Any]) -> dict[str, list[str]]:
    """Each section's plots as inline SVG (with the --against bundle's figures beside where they compare)."""
    other = (report.get("against") or {}).get("sections") or {}
    out: dict[str, list[str]] = {}
    for key, section in report["sections"].items():
        theirs = other.get(key, {}).get("figures")
        out[key] = [fn(section["figures"], theirs) for fn in PLOTS.get(key, [])]
    return out


def write_audit(root: Path | str, report: dict[str, Any]) -> tuple[Path, Path]:
    """Write reports/audit.json and reports/audit.html into the bundle (atomically); return their paths."""
    bundle = Bundle(root)
    bundle.write_json(AUDIT_JSON, report)
    bundle.write_text(AUDIT_HTML, render_page(report, plots(report)))
    return bundle.path(AUDIT_JSON), bundle.path(AUDIT_HTML)


def load_schema() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return doc


__all__ = ["AUDIT_HTML", "AUDIT_JSON", "compare", "load_schema", "plots", "run_audit", "write_audit"]
