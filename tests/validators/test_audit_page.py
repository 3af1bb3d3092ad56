"""The audit page in a real headless browser (Debian's chromium through Playwright): it renders with every
plot visible, no console error and no request leaving the file; a screenshot is saved under the test folder."""

from __future__ import annotations

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
