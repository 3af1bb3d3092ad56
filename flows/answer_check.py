"""The build's third answer check: every task answer re-derived with CRMArena's tool queries against the org.

`validators/tasks_soql.py` composes the tools over any simple-salesforce-shaped client. For a build, the
client is the embedded org's query engine called in this process (`orgs.local.inprocess.InProcessClient`):
HTTP was most of the check's cost (scale 10: 28.5 s of HTTPS for 3,029 queries, against ~6.5 s in
process). The instances are split over worker processes when the org is large enough for the start-up of
a worker to pay (`workers`), and a deterministic sample of them (`http_sample`: 5%, at least 10) is
re-derived once more through the served org over HTTPS with the real simple-salesforce client, so the
wire path is still exercised on every build; any difference between the two is a finding, as is any
answer that differs from the recorded one. Under `--runner dask` the build runs the same parts as stages on
the cluster (flows/build.py `check_on_workers`): `build_store`, then `check_in_process` per `task_chunks`
chunk, then `merge_and_sample` in the flow's process (it serves the org for the HTTP sample).

Only the outcome (verdicts, counts) depends on the data; which worker checked what never shows in it.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemas.gcpause import fewer_collections

if TYPE_CHECKING:
    from schemas.model import OrgModel
    from schemas.profile import Profile
    from validators.findings import Report
    from validators.staged import StagedRun

HTTP_SHARE = 0.05  # of the instances re-derived over HTTP as well
HTTP_MIN = 10
MAX_WORKERS = 4
PARALLEL_FROM_CASES = 20_000  # below this many cases a worker's start-up (~1.5 s) costs more than it saves
# Ids per list in one query in process (CRMArena's tools over HTTP: 150, for URL lengths). Measured at scale 40
# on one process: 2,071 queries in 30.4 s instead of 9,010 in 39.3 s; the rows are the same.
IN_PROCESS_CHUNK = 2000


@dataclass
class ApiCheckResult:
    instances: int
    queries: int
    workers: int
    http_sample: list[int]
    http_queries: int
    disagreements: list[Any] = field(default_factory=list)  # validators.tasks_soql.SoqlDisagreement
    mismatches: list[str] = field(default_factory=list)  # in-process and HTTP outcomes that differ
    seconds: dict[str, float] = field(default_factory=dict)


def http_sample(idxs: Sequence[int], share: float = HTTP_SHARE, minimum: int = HTTP_MIN) -> list[int]:
    """The instances also checked over HTTP: `share` of them (at least `minimum`), chosen by a hash of the
    idx (the same instances on every run of the same tasks, spread over every task), in idx order."""
    n = min(len(idxs), max(minimum, math.ceil(share * len(idxs))))
    ranked = sorted(idxs, key=lambda i: hashlib.sha256(f"orgseed.http-sample.{i}".encode()).hexdigest())
    return sorted(ranked[:n])


def default_workers(root: Path) -> int:
    """One process for small orgs; for large ones, one per two cores, up to MAX_WORKERS. (Each worker loads
    its own org and query cache: on 2 shared cores, scale 40 took 72 s on two workers and 39 s on one.)"""
    from orgs.bundle import Bundle

    cases = int((Bundle(root).read_manifest().get("counts") or {}).get("Case", 0))
    if cases < PARALLEL_FROM_CASES:
        return 1
    return max(1, min(MAX_WORKERS, (os.cpu_count() or 1) // 2))


def _partition(lines: list[dict[str, Any]], parts: int) -> list[list[dict[str, Any]]]:
    """Contiguous runs of instances grouped by task (a worker's query cache then serves its task's repeats)."""
    ordered = sorted(lines, key=lambda g: (str(g["task"]), int(g["idx"])))
    size = math.ceil(len(ordered) / parts) if ordered else 0
    return [ordered[i : i + size] for i in range(0, len(ordered), size or 1)]


CHECK_CACHE_KIB = 8_192  # SQLite's page cache per connection of the in-process check


def check_in_process(root: Path | str, lines: Sequence[dict[str, Any]] | None = None) -> Any:
    """Re-derive instances against the org's engine in this process (a worker's job): `lines`, lines of
    ground_truth.jsonl as `ground_truth_lines` gives them (a chunk's caller has read them: each chunk reading
    the whole file again took ~0.2 CPU-s of the scale-10 check), else every instance of the file."""
    from orgs.local.engine import LocalOrg
    from orgs.local.inprocess import InProcessClient
    from validators.tasks_soql import check_tasks_via_api

    # No memory-mapped reads: at scale 30 the mapped pages added ~70 MB to the check's resident memory
    # (401 -> 330 MB peak) for the same time (10.3 s vs 10.5 s); a served org keeps them.
    # A page cache of 8 MiB rather than a served org's 64: at scale 30 the check's peak fell 439 -> 382 MB
    # for the same CPU (6.45 vs 6.08-6.76 s, load ~1); the file's pages stay in the system's cache.
    org = LocalOrg(root, mmap_bytes=0, cache_kib=CHECK_CACHE_KIB)
    try:
        with fewer_collections():
            return check_tasks_via_api(root, InProcessClient(org), chunk=IN_PROCESS_CHUNK, lines=lines)
    finally:
        org.close()


def build_store(root: Path | str) -> float:
    """Build the org's store (org.sqlite in the bundle) once, before any worker opens it; its seconds."""
    from orgs.local.store import Store

    t = time.perf_counter()
    Store.open(Path(root)).close()
    return round(time.perf_counter() - t, 3)


# in the sidecar: the validation begun during generation (by the store stage) for a bundle root, with the
# fingerprints of its objects' files when they were written; the validate stage takes it (`validate_written`)
_begun: dict[str, tuple[StagedRun, dict[str, list[int]]]] = {}


def build_store_as_written(
    root: Path | str, profile: Profile | None = None, model: OrgModel | None = None
) -> float:
    """The store stage of a build with a sidecar (flows/sidecar.py), run there while the building process
    generates: each object is loaded into the org's store as soon as the building process says it is written
    (those written before the User without the API user, which the system fields take from it and which is
    written into them once the User is: `StoreBuilder.settle`), and the store is finished (the rest loaded,
    statistics, meta) once all are. The check through the org then finds it up to date. Its seconds, waits
    included.

    With `profile` (and `model`, the build's), validation is begun too: while no object is waiting to be
    loaded, the next of its steps runs if every object it reads is written (`StagedRun.advance`), so the
    process works through generation's slow objects rather than waiting; `validate_written` does the rest."""
    from flows.sidecar import notices
    from orgs.bundle import Bundle
    from orgs.local.computed import local_model
    from orgs.local.store import OrgFacts, StoreBuilder, fingerprint_of, org_facts_once_written
    from schemas.gcpause import gc_paused
    from schemas.model import load_model
    from validators.run import start_validation

    t = time.perf_counter()
    bundle = Bundle(root)
    model_here = local_model(load_model())  # as the check's Store.open has it
    builder = StoreBuilder(bundle, model_here)
    written: list[str] = []
    idle: Callable[[], bool] | None = None
    if profile is not None:
        run = start_validation(root, profile, model)
        prints: dict[str, list[int]] = {}
        _begun[str(root)] = (run, prints)
        ready: set[str] = set()

        def next_step() -> bool:
            with gc_paused():  # as in validate_bundle
                return run.advance(ready)

        idle = next_step

    try:
        waiting: list[str] = []
        facts: OrgFacts | None = None  # once the User (the API user) is written
        for name in notices(idle):
            if name not in model_here.objects:
                continue
            if profile is not None:
                prints[name] = fingerprint_of(bundle, model_here.get(name))
                ready.add(name)
            written.append(name)
            waiting.append(name)
            found = org_facts_once_written(bundle, model_here, written) if facts is None else (facts, True)
            if found is None:
                continue  # no go-live in the manifest: it needs every object's dates, so all wait for `finish`
            now, user_known = found
            if user_known and facts is None:
                facts = now
                builder.settle(facts.api_user)
            for loaded in waiting:
                builder.load(loaded, now, api_user_later=not user_known)
            waiting.clear()
        builder.finish(facts=facts)  # what was not loaded yet, with the bundle's facts
    finally:
        builder.abandon()
    return round(time.perf_counter() - t, 3)


def validate_written(root: Path | str, profile: Profile, model: OrgModel | None = None) -> Report:
    """The validate stage: `validate_bundle`, going on from the validation the store stage began in this
    process (`build_store_as_written`) when there is one whose objects' files are as they were when written;
    else from the start. The same report either way."""
    from orgs.bundle import Bundle
    from orgs.local.store import fingerprint_of
    from validators.run import validate_bundle

    begun = _begun.pop(str(root), None)
    early = None
    if begun is not None:
        run, prints = begun
        bundle = Bundle(root)
        if all(prints.get(name) == fingerprint_of(bundle, run.data.model.get(name)) for name in run.read):
            early = run
    return validate_bundle(root, profile, model, early=early)


def check_answers_through_the_org(
    root: Path, workers: int | None = None, share: float = HTTP_SHARE, minimum: int = HTTP_MIN
) -> ApiCheckResult:
    """Every instance in process (over `workers` processes), then the HTTP sample through the served org."""
    from validators.tasks_soql import ground_truth_lines

    seconds: dict[str, float] = {"store": build_store(root)}  # built once here, before any worker opens it
    lines = ground_truth_lines(root)
    workers = default_workers(root) if workers is None else max(1, workers)
    parts = _partition(lines, workers) if workers > 1 else []
    t = time.perf_counter()
    if len(parts) > 1:
        # spawn, not fork: the build may hold threads (Prefect, the writer) that a forked child would inherit
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=len(parts), mp_context=ctx) as pool:
            results = list(pool.map(check_in_process, [root] * len(parts), parts))
    else:
        results = [check_in_process(root)]
    seconds["in_process"] = round(time.perf_counter() - t, 3)
    return merge_and_sample(root, lines, results, max(1, len(parts)), seconds, share, minimum)


def task_chunks(lines: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The instances as one chunk per task, (task, its lines in idx order), tasks in the order of `_partition`. A chunk's
    queries are those of the same task in a one-process check (`check_tasks_via_api` starts a new query cache
    at each task), so checking the chunks apart runs the same queries, counted the same."""
    chunks: dict[str, list[dict[str, Any]]] = {}
    for g in sorted(lines, key=lambda g: (str(g["task"]), int(g["idx"]))):
        chunks.setdefault(str(g["task"]), []).append(g)
    return list(chunks.items())


def merge_and_sample(
    root: Path,
    lines: list[dict[str, Any]],
    results: Sequence[Any],
    workers: int,
    seconds: dict[str, float],
    share: float = HTTP_SHARE,
    minimum: int = HTTP_MIN,
) -> ApiCheckResult:
    """Merge the in-process outcomes of every chunk (`results`: `check_in_process`'s, wherever each ran), then
    re-derive the HTTP sample through the served org and compare the two."""
    sample = http_sample([int(g["idx"]) for g in lines], share, minimum)
    return merged(len(lines), results, check_over_http(root, sample, seconds, lines), workers, seconds)


@dataclass
class HttpSample:
    idxs: list[int]  # the instances re-derived over HTTP
    check: Any  # their validators.tasks_soql.SoqlCheck


def check_over_http(
    root: Path,
    sample: list[int],
    seconds: dict[str, float],
    lines: Sequence[dict[str, Any]] | None = None,
) -> HttpSample:
    """Re-derive the instances `sample` through the served org (simple-salesforce over HTTPS); its seconds in
    `seconds["http_sample"]`. `lines`: ground_truth.jsonl's lines when the caller has read them
    (`ground_truth_lines`), else the file is read here."""
    from orgs.local.engine import LocalOrg
    from orgs.local.serve import LocalServer
    from validators.tasks_soql import check_tasks_via_api

    t = time.perf_counter()
    client = server = None
    # the org served with the in-process check's reads (`check_in_process`): no memory-mapped pages and a
    # small page cache. A served org's (256 MiB mapped, 64 MiB cached per connection) held ~200 MB of this
    # step at scale 100 (a fresh process: peak 518 -> 312 MB), for the same time (7.1 vs 7.3 s)
    org = LocalOrg(root, mmap_bytes=0, cache_kib=CHECK_CACHE_KIB)
    try:
        with fewer_collections():  # the server's thread and the client's in this process
            server = LocalServer(root, org=org)
            client = server.start().client()
            over_http = check_tasks_via_api(root, client, only=sample, lines=lines)
    finally:
        # The client's kept-alive connection closed first: the server's shutdown otherwise waits for it
        # (up to its graceful time-out, 2 s; scale 10: disconnect took 2.1 s, 0.17 s with it closed).
        if client is not None:
            client.session.close()
        if server is not None:
            server.stop()
        org.close()
    seconds["http_sample"] = round(time.perf_counter() - t, 3)
    return HttpSample(sample, over_http)


def merged(
    instances: int, results: Sequence[Any], http: HttpSample, workers: int, seconds: dict[str, float]
) -> ApiCheckResult:
    """The in-process outcomes of every chunk merged, and compared with the HTTP sample's (`check_over_http`)."""
    outcomes: dict[int, tuple[Any, bool]] = {}
    disagreements = []
    for r in results:
        outcomes.update(r.outcomes)
        disagreements += r.disagreements
    disagreements.sort(key=lambda d: d.idx)
    sample, over_http = http.idxs, http.check
    mismatches = [
        f"idx {i}: in process the org's tools give {outcomes.get(i)!r} (answer, tie) but over HTTP "
        f"{over_http.outcomes.get(i)!r}; the embedded org's engine and its REST API disagree "
        "(orgs/local/inprocess.py, orgs/local/api.py)."
        for i in sample
        if outcomes.get(i) != over_http.outcomes.get(i)
    ]
    return ApiCheckResult(
        instances=instances,
        queries=sum(r.queries for r in results),
        workers=workers,
        http_sample=sample,
        http_queries=over_http.queries,
        disagreements=disagreements,
        mismatches=mismatches,
        seconds=seconds,
    )
