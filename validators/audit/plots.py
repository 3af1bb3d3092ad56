"""The audit's plots: matplotlib (Agg) figures rendered to inline SVG, so the page needs no network or script."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

plt.rcParams.update(
    {"svg.hashsalt": "orgseed", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False}
)
COLOR = "#3b6ea8"
OTHER = "#c8793a"


def svg(fig: Figure, title: str) -> str:
    """The figure as an SVG element (no XML header), with a title for screen readers."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    start = text.index("<svg")
    body = text[start:]
    return body.replace(">", f' role="img" aria-label="{title}" class="plot">', 1)


def _bars(
    labels: list[str],
    values: list[float],
    title: str,
    xlabel: str,
    other: list[float] | None = None,
    log: bool = False,
) -> str:
    fig, ax = plt.subplots(figsize=(6.4, max(1.6, 0.24 * len(labels) + 0.8)))
    pos = list(range(len(labels)))
    if other is None:
        ax.barh(pos, values, color=COLOR)
    else:
        ax.barh([p - 0.2 for p in pos], values, height=0.4, color=COLOR, label="this bundle")
        ax.barh([p + 0.2 for p in pos], other, height=0.4, color=OTHER, label="--against")
        ax.legend(loc="lower right", frameon=False)
    ax.set_yticks(pos, labels)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel(xlabel)
    ax.set_title(title, loc="left")
    return svg(fig, title)


def integrity_plot(figures: dict[str, Any], other: dict[str, Any] | None) -> str:
    rels = figures["relationships"]
    labels = [f"{r['child']}.{r['field']}" for r in rels]
    return _bars(
        labels,
        [r["per_parent"]["mean"] for r in rels],
        "Children per parent (mean)",
        "children per parent record",
    )


def months_plot(figures: dict[str, Any], other: dict[str, Any] | None) -> str:
    months = [str(m) for m in range(1, 13)]
    values = [figures["cases_by_month"].get(m, 0) for m in months]
    theirs = [other["cases_by_month"].get(m, 0) for m in months] if other else None
    names = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    return _bars(names, values, "Cases created per calendar month", "cases", theirs)


def states_plot(figures: dict[str, Any], other: dict[str, Any] | None) -> str:
    top = list(figures["accounts_by_state"].items())[:15]
    theirs = [other["accounts_by_state"].get(k, 0.0) for k, _ in top] if other else None
    return _bars(
        [k for k, _ in top],
        [v for _, v in top],
        "Customers by state (15 largest)",
        "share of accounts",
        theirs,
    )


def latent_plot(figures: dict[str, Any], other: dict[str, Any] | None) -> str:
    effects = figures["effects"]
    if not effects:
        fig, ax = plt.subplots(figsize=(6.4, 1.2))
        ax.axis("off")
        ax.text(0.0, 0.5, "no latent world in this bundle")
        return svg(fig, "no latent effects")
    cols = min(3, len(effects))
    rows = (len(effects) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
    for ax, e in zip(axes.flat, effects, strict=False):
        xs = [p[0] for p in e["points"]]
        ys = [p[1] for p in e["points"]]
        ax.scatter(xs, ys, s=10, color=COLOR if e["shows"] else "#b03a2e", alpha=0.7)
        ax.set_title(f"{e['name']}\nrho {e['rho']}  CI {e['ci95']}", fontsize=8, loc="left")
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(effects) :]:
        ax.axis("off")
    fig.tight_layout()
    return svg(fig, "latent variables against what the data shows")


def text_plot(figures: dict[str, Any], other: dict[str, Any] | None) -> str:
    kinds = figures["kinds"]
    labels = [f"{k['object']}.{k['field']}" for k in kinds]
    return _bars(
        labels,
        [k["distinct_2"] for k in kinds],
        "Distinct word pairs / all word pairs, per text kind",
        "distinct-2 ratio",
    )


def tasks_plot(figures: dict[str, Any], other: dict[str, Any] | None) -> str:
    rows = figures["tasks"]
    if not rows:
        fig, ax = plt.subplots(figsize=(6.4, 1.2))
        ax.axis("off")
        ax.text(0.0, 0.5, "no tasks in this bundle")
        return svg(fig, "no tasks")
    fig, ax = plt.subplots(figsize=(6.4, 0.32 * len(rows) + 1.0))
    names = [r["abbreviation"] for r in rows]
    width = 0.27
    for k, (key, label, color) in enumerate(
        (
            ("baseline_none", "always None", "#999999"),
            ("baseline_majority", "majority answer", OTHER),
            ("baseline_random", "random candidate", COLOR),
        )
    ):
        ax.barh(
            [i + (k - 1) * width for i in range(len(rows))],
            [r[key] for r in rows],
            height=width,
            label=label,
            color=color,
        )
    ax.set_yticks(range(len(rows)), names)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("exact-match accuracy of a naive baseline")
    ax.legend(loc="lower right", frameon=False, fontsize=7)
    ax.set_title("How far a guess gets, per task", loc="left")
    return svg(fig, "naive baselines per task")


PLOTS: dict[str, list[Callable[[dict[str, Any], dict[str, Any] | None], str]]] = {
    "integrity": [integrity_plot],
    "distributions": [months_plot, states_plot],
    "latent": [latent_plot],
    "text": [text_plot],
    "tasks": [tasks_plot],
    "llm": [],
}
