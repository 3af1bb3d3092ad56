"""Hostile bundles (issue 10 item 3): each bundle of the corpus (`tests/fixtures/hostile/corpus.py`) goes
through the real `orgseed validate` in a subprocess: it ends within seconds with exit 2 (the bundle cannot
be read) or 1 (data findings), one clear error, no traceback, and the bundle unchanged."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.fixtures.hostile.corpus import CORPUS


def fingerprint(root: Path) -> dict[str, object]:
    """What is in the bundle, without following links or opening FIFOs."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            rel = str(p.relative_to(root))
            if stat.S_ISREG(st.st_mode):
                out[rel] = p.read_bytes()
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            else:
                out[rel] = ("kind", stat.S_IFMT(st.st_mode))
    return out


@pytest.fixture(scope="module")
def pristine(small_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small bundle without its served-org files (only what the build wrote)."""
    import shutil

    dst = tmp_path_factory.mktemp("pristine") / "bundle"
    shutil.copytree(small_bundle, dst, ignore=shutil.ignore_patterns("org.sqlite*", "tls"), symlinks=True)
    return dst


def test_the_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_a_hostile_bundle_is_refused_cleanly(name: str, pristine: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "bundle"
    shutil.copytree(pristine, root)
    CORPUS[name](root)
    before = fingerprint(root)
    res = subprocess.run(
        [sys.executable, "-m", "flows.cli", "validate", str(root)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert res.returncode in (1, 2), (res.returncode, res.stdout[-2000:], res.stderr[-2000:])
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout, res.stderr[-3000:]
    after = fingerprint(root)
    # validate writes its report into reports/; nothing else changes
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed <= {"reports/validation.json"}, changed


@pytest.mark.parametrize(
    ("name", "field", "chars"),
    [
        ("nul-byte-in-text", "Subject", "U+0000"),
        ("control-character-in-text", "Description", "U+0007, U+001B"),
    ],
)
def test_control_characters_are_findings_naming_the_cell(
    name: str, field: str, chars: str, pristine: Path, tmp_path: Path
) -> None:
    import json
    import shutil

    root = tmp_path / "bundle"
    shutil.copytree(pristine, root)
    CORPUS[name](root)  # the first Case record (line 2 of data/Case.csv)
    case_id = (root / "data" / "Case.csv").read_text().split("\n")[1].split(",")[0]
    res = subprocess.run(
        [sys.executable, "-m", "flows.cli", "validate", str(root)], cwd=REPO, capture_output=True, timeout=60
    )
    assert res.returncode in (1, 2)
    report = json.loads((root / "reports" / "validation.json").read_text())
    hits = [f for f in report["findings"] if f["rule"] == "text.control-character"]
    assert [(f["record"], f["field"], f["line"]) for f in hits] == [(case_id, field, 2)]
    assert chars in hits[0]["message"]
