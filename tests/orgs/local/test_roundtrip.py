"""A bundle loaded into an empty org through Bulk API 2.0 reads back identical (issue 11, what must hold).

The loader (`orgs/salesforce/load.py`) deploys the metadata and loads every object through the real
simple-salesforce client over HTTPS into `orgseed serve --empty`'s org. The expected values are the bundle's
CSV files read here with the csv module, and the comparison maps lookups through the external ids the org
holds: nothing is taken from the loader's own bookkeeping. Then every task answer of the bundle's ground
truth is re-derived with CRMArena's tool queries against the written org (ids mapped) and must agree.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orgs.local.serve import LocalServer
from orgs.local.writable.org import WritableOrg
from orgs.salesforce.load import EXT, Loader, ObjectLoad
from schemas.model import load_model
from tests.orgs.readback import bundle_rows, differences
from validators.tasks_soql import check_tasks_via_api


class Loaded:
    def __init__(self, root: Path, bundle: Path, **knobs: Any) -> None:
        self.org = WritableOrg(root / "state", edition="enterprise", person_accounts=True)
        self.server = LocalServer(root / "state", org=self.org).start()
        self.sf = self.server.client()
        self.loader = Loader(self.sf, bundle, load_model(), wait=0.05, **knobs)
        self.results: list[ObjectLoad] = self.loader.run()

    def close(self) -> None:
        self.server.stop()
        self.org.close()


@pytest.fixture(scope="module")
def loaded(small_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    done = Loaded(tmp_path_factory.mktemp("roundtrip"), small_bundle)
    yield done
    done.close()


def test_every_record_reads_back_identical(loaded: Loaded, small_bundle: Path) -> None:
    assert all(not r.failed for r in loaded.results), [
        (r.sobject, r.failed[:2]) for r in loaded.results if r.failed
    ]
    assert differences(loaded.sf, small_bundle) == []


def test_historical_dates_are_kept(loaded: Loaded, small_bundle: Path) -> None:
    cases = {r["Id"]: r for r in bundle_rows(small_bundle, "Case")}
    back = loaded.sf.query_all(f"SELECT {EXT}, CreatedDate, ClosedDate, CaseNumber FROM Case")["records"]
    assert len(back) == len(cases)
    assert all(r["CreatedDate"] == cases[r[EXT]]["CreatedDate"] for r in back)
    closed = [r for r in back if cases[r[EXT]]["ClosedDate"]]
    assert closed and all(r["ClosedDate"] == cases[r[EXT]]["ClosedDate"] for r in closed)
    # the org's CreatedDate lies in the bundle's past, not the day of the load
    assert max(r["CreatedDate"] for r in back) < "2026"


def test_orders_active_and_articles_published_as_in_the_bundle(loaded: Loaded, small_bundle: Path) -> None:
    want = {r["Id"]: r["Status"] for r in bundle_rows(small_bundle, "Order")}
    got = {r[EXT]: r["Status"] for r in loaded.sf.query_all(f"SELECT {EXT}, Status FROM Order")["records"]}
    assert got == want and "Activated" in want.values()
    arts = {r["Id"]: r["PublishStatus"] for r in bundle_rows(small_bundle, "Knowledge__kav")}
    got = {
        r[EXT]: r["PublishStatus"]
        for r in loaded.sf.query_all(f"SELECT {EXT}, PublishStatus FROM Knowledge__kav")["records"]
    }
    assert got == arts


def test_task_answers_agree_through_the_written_org(loaded: Loaded, small_bundle: Path) -> None:
    result = check_tasks_via_api(small_bundle, loaded.sf, ids=loaded.loader.id_map_all())
    assert result.instances > 0
    assert result.disagreements == []


def test_a_rerun_loads_nothing_twice(loaded: Loaded, small_bundle: Path) -> None:
    before = loaded.sf.query("SELECT COUNT() FROM Case")["totalSize"]
    again = loaded.loader.run()
    assert all(r.loaded == 0 and r.existing == r.bundle for r in again), [
        (r.sobject, r.loaded, r.existing, r.bundle) for r in again
    ]
    assert loaded.sf.query("SELECT COUNT() FROM Case")["totalSize"] == before


def test_without_the_audit_permission_historical_dates_are_refused(
    small_bundle: Path, tmp_path: Path
) -> None:
    done = Loaded(tmp_path, small_bundle, audit_fields=False)
    try:
        case = next(r for r in done.results if r.sobject == "Case")
        assert case.loaded == 0 and len(case.failed) == case.bundle
        assert {f["error"].split(":", 1)[0] for f in case.failed} == {"INVALID_FIELD_FOR_INSERT_UPDATE"}
        assert all("CreatedDate" in f["error"] for f in case.failed)
    finally:
        done.close()
