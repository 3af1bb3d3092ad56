"""A served bundle that changes on disk (served.py): a rebuild swapped in by rename is served from the next
call; a bundle that is incomplete or gone is refused with 503 saying why, until it is whole again."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import requests

from orgs.local.serve import LocalServer
from tests.conftest import copy_bundle

V = "/services/data/v59.0"


def count(srv: LocalServer, sobject: str = "Case") -> requests.Response:
    return requests.get(
        f"{srv.url}{V}/query/",
        params={"q": f"SELECT COUNT() FROM {sobject}"},
        headers={"Authorization": f"Bearer {srv.token}"},
        timeout=60,
    )


def csv_rows(bundle: Path, sobject: str) -> int:
    with open(bundle / "data" / f"{sobject}.csv", encoding="utf-8", newline="") as fh:
        return sum(1 for _ in csv.reader(fh)) - 1


def test_a_rebuild_swapped_in_is_served(small_bundle: Path, default_bundle: Path, tmp_path: Path) -> None:
    served = copy_bundle(small_bundle, tmp_path / "org")
    with LocalServer(served, tls=False, token="t") as srv:
        assert count(srv).json()["totalSize"] == csv_rows(small_bundle, "Case")
        before = srv.org
        # what an atomic rebuild does: the new bundle is written beside, then renamed over the old one
        staging = copy_bundle(default_bundle, tmp_path / ".org.staging")
        served.rename(tmp_path / ".org.old")
        staging.rename(served)
        r = count(srv)
        assert r.status_code == 200 and r.json()["totalSize"] == csv_rows(default_bundle, "Case")
        assert srv.org is not before and srv.org.bundle.root == served
        # the same data again (a manifest rewritten in place): nothing is reloaded
        manifest = served / "manifest.json"
        manifest.write_text(manifest.read_text(encoding="utf-8") + "\n", encoding="utf-8")
        now = srv.org
        assert count(srv).status_code == 200 and srv.org is now


def test_an_incomplete_or_missing_bundle_is_refused(small_bundle: Path, tmp_path: Path) -> None:
    served = copy_bundle(small_bundle, tmp_path / "org")
    manifest_path = served / "manifest.json"
    good = manifest_path.read_text(encoding="utf-8")
    with LocalServer(served, tls=False, token="t") as srv:
        assert count(srv).status_code == 200
        manifest_path.write_text(json.dumps({**json.loads(good), "status": "in_progress"}), encoding="utf-8")
        r = count(srv)
        assert r.status_code == 503 and r.json()[0]["errorCode"] == "SERVER_UNAVAILABLE"
        assert "status 'in_progress'" in r.json()[0]["message"] and str(served) in r.json()[0]["message"]
        shutil.rmtree(served)
        r = count(srv)
        assert r.status_code == 503 and "manifest cannot be read" in r.json()[0]["message"]
        copy_bundle(small_bundle, served)  # whole again: served, without a restart
        assert count(srv).json()["totalSize"] == csv_rows(small_bundle, "Case")
