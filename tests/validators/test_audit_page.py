"""The audit page in a real headless browser (Debian's chromium through Playwright): it renders with every
plot visible, no console error and no request leaving the file; a screenshot is saved under the test folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.conftest import copy_bundle
from validators.audit import plots, run_audit, write_audit

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.parametrize("against", [False, True])
def test_report_renders_with_every_plot_visible(
    small_bundle: Path, default_bundle: Path, tmp_path: Path, against: bool
) -> None:
    assert CHROMIUM, (
        "Debian's chromium is missing: `make .venv/.installed` installs it (apt-get install chromium)"
    )
    root = copy_bundle(small_bundle, tmp_path / "b")
    report = run_audit(root, against=default_bundle if against else None)
    _, html = write_audit(root, report)
    expected_plots = sum(len(v) for v in plots(report).values())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            console: list[str] = []
            requests: list[str] = []
            page.on(
                "console",
                lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
            )
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(html.resolve().as_uri())
            svgs = page.locator("svg.plot")
            assert svgs.count() == expected_plots >= 6
            for i in range(svgs.count()):
                svgs.nth(i).scroll_into_view_if_needed()
                box = svgs.nth(i).bounding_box()
                assert box is not None and box["width"] > 200 and box["height"] > 80, (i, box)
                assert svgs.nth(i).is_visible()
            assert page.locator("#overview tr").count() == 1 + len(report["sections"])
            assert page.locator("section#against").count() == int(against)
            page.screenshot(path=str(tmp_path / "audit-first-screen.png"))
        finally:
            browser.close()
    assert console == []
    assert all(u.startswith("file://") for u in requests), requests  # self-contained: nothing fetched
    assert (tmp_path / "audit-first-screen.png").stat().st_size > 10_000


def test_the_fidelity_figures_show_on_the_page(default_bundle: Path, tmp_path: Path) -> None:
    """Issue 16 item 7 ("and the audit shows them"): the fidelity section of the default org's page holds every
    figure of reports/fidelity.json (distinct queries per task, None mentions, example hints, NED exact-name share,
    verbatim knowledge questions, distinct-n and the most repeated 8-word sequences per text field), visible."""
    assert CHROMIUM, "Debian's chromium is missing: `make .venv/.installed` installs it"
    root = copy_bundle(default_bundle, tmp_path / "b")
    report = run_audit(root)
    figures = json.loads((root / "reports" / "fidelity.json").read_text())  # written by the build
    assert report["sections"]["fidelity"]["figures"]["queries"] == figures["queries"]
    _, html = write_audit(root, report)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(html.resolve().as_uri())
            section = page.locator("section#fidelity")
            section.scroll_into_view_if_needed()
            assert section.is_visible()
            rows = section.locator("table.fidelity-queries tr")
            assert rows.count() == 1 + len(figures["queries"]) == 10
            for i, q in enumerate(figures["queries"], start=1):
                cells = [c.strip() for c in rows.nth(i).locator("td").all_inner_texts()]
                assert cells == [
                    q["task"],
                    str(q["instances"]),
                    str(q["distinct_queries"]),
                    str(q["crmarena_distinct_queries"]),
                    str(q["none_mentions"]),
                    str(q["answer_hints"]),
                ]
            assert section.locator(".none-mentions").inner_text() == str(figures["none_mentions"])
            assert section.locator(".answer-hints").inner_text() == str(figures["answer_hints"])
            assert float(section.locator(".ned-exact").inner_text()) == figures["ned_exact_name_share"]
            verbatim = figures["knowledge_qa"]["verbatim_question_share"]
            assert float(section.locator(".verbatim").inner_text()) == verbatim
            text_rows = section.locator("table.fidelity-text tr")
            assert text_rows.count() == 1 + len(figures["text"]) >= 5
            for i, t in enumerate(figures["text"], start=1):
                row = text_rows.nth(i)
                cells = [c.strip() for c in row.locator("td").all_inner_texts()]
                assert cells[:5] == [
                    t["name"],
                    str(t["records"]),
                    *(str(t[f"distinct_{n}"]) for n in (1, 2, 3)),
                ]
                grams = row.locator("span.gram")
                assert grams.count() == len(t["top_8grams"]) > 0
                for k, g in enumerate(t["top_8grams"]):
                    assert g["text"] in grams.nth(k).inner_text() and grams.nth(k).is_visible()
        finally:
            browser.close()
