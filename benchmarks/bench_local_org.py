"""Round-trip latency of the CRMArena tool queries against the local org, beside the same SQL run directly.

    .venv/bin/python benchmarks/bench_local_org.py [--scales 1 10] [--reps 20] [--variants 5] [--profile]

For each scale a bundle is built once into output/bench/local_org_s<scale>/ (reused afterwards). Then, for
each tool of reference crmarena.md §9 (the SOQL/SOSL the CRMArena harness sends), `--variants` parameter
sets are drawn from the data and each query is timed `--reps` times:

- served: the unmodified simple-salesforce client over HTTPS to `orgseed serve`'s server (in a thread of
  this process), `query_all` / `search`, i.e. everything an agent pays: HTTP, TLS, parsing, compiling (plans
  are cached by query text, as in a long benchmark run), SQLite, shaping records and JSON.
- raw SQL: the SQL the compiler produced for that query, with its parameters, on a plain sqlite3
  connection to the same org.sqlite (`fetchall()`).

The three runners (served, raw, in-process) are interleaved call by call, so each sees the same machine
(this VM's speed drifts by tens of percent within a minute) and the SQL runs with caches as the server's
own SQL finds them, right after an HTTP call. The same SQL timed back to back in a hot loop is faster, by
up to 3× for the tiny queries; the overhead against that best case is printed too.

Also timed: `client`, the CPU time of the calling thread during each served call, i.e. the client's own
work (simple-salesforce, requests, urllib3, its side of TLS, JSON decoding), which it would spend against
any server, a real org included; and `in-process`, LocalOrg.query/search + JSON encoding without HTTP.
Per call, server+wire = served − client: the server thread's work (TLS, HTTP parsing, routing, compiling,
SQLite, shaping, JSON) plus loopback transfer and wake-ups; `server CPU` = the process's CPU time minus the
calling thread's: the server's work alone (its event loop and worker threads), the figure to read on a
loaded machine, where wall-clock waits for a core swamp server+wire. Serving overhead (HTTP + translation) =
server+wire − raw; translation overhead = in-process − raw. Targets: served p50 under 5 ms at scale 1; at
scale 10 the serving overhead at most 2× the raw SQL time, summed over the tool mix. The end-to-end ratio
(served − raw) / raw, which counts the client's own work too, is printed beside it.
`--profile` profiles the in-process path (LocalOrg.query/search + JSON encoding) with pyinstrument.
Each scale also times a Bulk API 2.0 export (sf.bulk2 query) of every field of Case, CaseHistory__c and
OrderItem, from job creation to the last CSV page.

Ingest (`--ingest`, on by default; `--ingest-only` skips the query timings): the bundle loaded into a new
empty org (`orgseed serve --empty`, enterprise edition, Person Accounts) by `orgs/salesforce/load.py` through
the real client: the metadata deploy, then one Bulk API 2.0 insert job per object, the existence checks,
order activation and article publishing, timed end to end: records/s, API calls in all and per Bulk job.
Target: the default org's 40k records in under 30 s.

Under load, against `orgseed serve`'s server in a process of its own (so the clients do not share its GIL):
- `--clients` (50) concurrent simple-salesforce clients (threads spread over `--client-processes`
  processes, each with its own connection) run the tool mix for `--seconds`: throughput (calls/s), p50
  and p99 latency, and errors (any exception; the target is 0);
- a 1 ms lookup (`get_account_id_by_contact_id`) timed alone, then while 3 clients keep running a
  query of about 100 ms (a LIKE per product name against OrderItem, sized to 100 ms on this machine):
  its p50 (target under 10 ms: queries run in worker threads, SQLite releases the GIL).
"""

from __future__ import annotations

import argparse
import csv as csvlib
import io
import json
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import requests

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from orgs.local.engine import LocalOrg  # noqa: E402
from orgs.local.serve import LocalServer  # noqa: E402
from orgs.local.sosl import register_matcher  # noqa: E402


@dataclass
class Tool:
    name: str
    queries: list[str] = field(default_factory=list)


BUNDLES: dict[float, Path] = {}  # --bundle: an existing bundle (a copy: org.sqlite is written into it)


def build(scale: float) -> Path:
    if scale in BUNDLES:
        return BUNDLES[scale]
    out = REPO / "output" / "bench" / f"local_org_s{scale:g}"
    if (out / "manifest.json").exists():
        manifest = json.loads((out / "manifest.json").read_text())
        if manifest.get("status") == "complete" and manifest.get("scale") == scale:
            return out
    from flows.options import BuildOptions
    from flows.run import run_build

    t = time.perf_counter()
    run_build(BuildOptions(profile="crmarena", scale=scale, out=str(out), force=True, engine="local"))
    print(f"built scale {scale:g} in {time.perf_counter() - t:.1f} s → {out}", file=sys.stderr)
    return out


def csv(root: Path, name: str) -> pd.DataFrame:
    """An object's records as strings ("" for empty), from its file or its parts (scale 100 has parts)."""
    from orgs.bundle import Bundle

    frame = Bundle(root).read_raw(name).drop(columns="_line")
    return frame.fillna("").astype(str)


def tool_queries(root: Path, variants: int) -> list[Tool]:
    """The harness's queries (crmarena.md §9), with parameters spread over the data."""
    cases = csv(root, "Case")
    items = csv(root, "OrderItem")
    orders = csv(root, "Order").set_index("Id")
    contacts = csv(root, "Contact")
    products = csv(root, "Product2")
    chats = csv(root, "LiveChatTranscript")
    pick = lambda frame, k: frame.iloc[(k * 7919) % len(frame)]  # noqa: E731
    windows = []
    for k in range(variants):
        year, month = 2021 + k % 3, 1 + (3 * k) % 12
        end_month = month + 3
        end = f"{year + (end_month - 1) // 12}-{(end_month - 1) % 12 + 1:02d}-01T00:00:00Z"
        windows.append((f"{year}-{month:02d}-01T00:00:00Z", end))
    tools = [
        Tool(n)
        for n in (
            "get_agent_handled_cases_by_period",
            "get_non_transferred_case_ids",
            "get_agent_transferred_cases_by_period",
            "get_cases",
            "get_shipping_state",
            "get_order_item_ids_by_product",
            "get_issue_counts",
            "get_account_id_by_contact_id",
            "get_purchase_history",
            "search_knowledge_articles",
            "search_products",
            "get_issues",
            "get_email_messages_by_case_id",
            "get_livechat_transcript_by_case_id",
        )
    ]
    by = {t.name: t for t in tools}
    terms = [
        "store credit",
        "refund",
        "warranty claim",
        "exchange",
        "shipping delay",
        "cancel order",
        "loyalty",
    ]
    for k in range(variants):
        s, e = windows[k]
        case = pick(cases, k)
        by["get_agent_handled_cases_by_period"].queries.append(
            f"SELECT NewValue__c, CreatedDate FROM CaseHistory__c WHERE CreatedDate >= {s} AND CreatedDate <= {e} "
            "AND Field__c = 'Owner Assignment'"
        )
        by["get_non_transferred_case_ids"].queries.append(
            f"SELECT CaseId__c FROM CaseHistory__c WHERE Field__c='Owner Assignment' AND CreatedDate >= {s} AND "
            f"CreatedDate <= {e} GROUP BY CaseId__c HAVING COUNT(Id) = 1"
        )
        by["get_agent_transferred_cases_by_period"].queries.append(
            f"SELECT OldValue__c, CreatedDate FROM CaseHistory__c WHERE Field__c='Owner Assignment' AND OldValue__c != "
            f"NULL AND CreatedDate >= {s} AND CreatedDate <= {e}"
        )
        agents = sorted(set(cases["OwnerId"].iloc[[(k * 31 + j * 97) % len(cases) for j in range(5)]]))
        by["get_cases"].queries.append(
            f"SELECT OwnerId, CreatedDate, ClosedDate, AccountId FROM Case WHERE CreatedDate >= {s} AND "
            f"CreatedDate < {e} AND OwnerId IN {tuple(agents)!r} AND Status = 'Closed'".replace('"', "'")
        )
        accts = tuple(cases["AccountId"].iloc[[(k * 13 + j * 101) % len(cases) for j in range(10)]])
        by["get_shipping_state"].queries.append(
            f"SELECT Id, ShippingState FROM Account WHERE Id IN {accts!r}"
        )
        product = pick(products, k)["Id"]
        by["get_order_item_ids_by_product"].queries.append(
            f"SELECT Id FROM OrderItem WHERE Product2Id = '{product}'"
        )
        oi = tuple(items.loc[items["Product2Id"] == product, "Id"])[:300] or (pick(items, k)["Id"],)
        oi_list = "('" + "', '".join(oi) + "')"
        by["get_issue_counts"].queries.append(
            f"SELECT IssueId__c, COUNT(Id) IssueCount FROM Case WHERE OrderItemId__c IN {oi_list} AND CreatedDate >= "
            f"2020-01-01T00:00:00Z AND CreatedDate <= 2024-06-01T00:00:00Z GROUP BY IssueId__c ORDER BY COUNT(Id) DESC"
        )
        by["get_account_id_by_contact_id"].queries.append(
            f"SELECT AccountId FROM Contact WHERE Id = '{pick(contacts, k)['Id']}' LIMIT 1"
        )
        item = pick(items, k)
        order = orders.loc[item["OrderId"]]
        by["get_purchase_history"].queries.append(
            f"SELECT Product2Id FROM OrderItem WHERE OrderItem.Order.AccountId = '{order['AccountId']}' AND "
            f"OrderItem.Order.EffectiveDate = {order['EffectiveDate']} AND Product2Id IN ('{item['Product2Id']}', "
            f"'{product}') AND OrderItem.Order.Status = 'Activated'"
        )
        by["search_knowledge_articles"].queries.append(
            f"FIND {{{terms[k % len(terms)]}}} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title, FAQ_Answer__c "
            "WHERE PublishStatus='Online' AND Language='en_US')"
        )
        by["search_products"].queries.append(
            f"FIND {{{products['Name'].iloc[(k * 37) % len(products)].split()[-1]}}} IN ALL FIELDS RETURNING "
            "Product2(Id, Name, Description)"
        )
        by["get_issues"].queries.append("SELECT Id, Name FROM Issue__c")
        by["get_email_messages_by_case_id"].queries.append(
            f"SELECT Subject, TextBody, FromAddress, ToAddress, MessageDate FROM EmailMessage WHERE ParentId = "
            f"'{case['Id']}'"
        )
        by["get_livechat_transcript_by_case_id"].queries.append(
            f"SELECT Body, EndTime FROM LiveChatTranscript WHERE CaseId = '{pick(chats, k)['CaseId']}'"
        )
    return tools


def raw_runner(org: LocalOrg, db: sqlite3.Connection, query: str) -> Callable[[], int]:
    """The compiled SQL of `query`, run straight on SQLite."""
    if query.startswith("FIND"):
        plan = org.search_plan(query)
        for obj in plan.objects:
            if obj.matcher is not None:
                register_matcher(db, obj.matcher)

        def run_search() -> int:
            return sum(len(db.execute(o.sql, o.params).fetchall()) for o in plan.objects)

        return run_search
    soql = org.plan(query)

    def run() -> int:
        return len(db.execute(soql.sql, soql.params).fetchall())

    return run


def inproc_runner(org: LocalOrg, query: str) -> Callable[[], int]:
    """The org's own work without HTTP: LocalOrg.query/search (compile cache, SQL, records) + JSON."""
    if query.startswith("FIND"):
        return lambda: len(orjson.dumps(org.search(query)))
    return lambda: len(orjson.dumps(org.query(query, batch=2000)))


def served_runner(sf: Any, query: str) -> Callable[[], int]:
    if query.startswith("FIND"):
        return lambda: len(sf.search(query)["searchRecords"])
    return lambda: len(sf.query_all(query)["records"])


@dataclass
class Samples:
    """Milliseconds per call: wall clock, process CPU (client + server: the server runs in a thread of this
    process; not inflated by other processes' load) and the calling thread's CPU (the client's own work
    alone: the server's thread is not counted, and a thread blocked on its socket uses none)."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    own: list[float] = field(default_factory=list)


def paired_timings(runners: list[Callable[[], int]], reps: int) -> tuple[list[Samples], int]:
    """Each runner timed `reps` times, interleaved call by call (served, raw, in-process, served, ...), so
    every runner sees the same machine: this VM's speed drifts by tens of percent within a minute, which
    timing one runner after the other turns into noise in their ratio. Returns the first runner's row count."""
    rows = runners[0]()
    for fn in runners:
        fn()
        fn()  # warm caches
    out = [Samples() for _ in runners]
    for _ in range(reps):
        for fn, samples in zip(runners, out, strict=True):
            t, c, o = time.perf_counter(), time.process_time(), time.thread_time()
            fn()
            samples.own.append((time.thread_time() - o) * 1000)
            samples.cpu.append((time.process_time() - c) * 1000)
            samples.wall.append((time.perf_counter() - t) * 1000)
    return out, rows


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_scale(
    scale: float, reps: int, variants: int, profile: bool, load: argparse.Namespace
) -> dict[str, Any]:
    root = build(scale)
    tools = tool_queries(root, variants)
    server = LocalServer(root).start()
    org = server.org
    sf = server.client()
    db = sqlite3.connect(f"file:{org.store.path}?mode=ro", uri=True)
    for pragma in ("query_only = 1", "mmap_size = 268435456", "cache_size = -65536", "temp_store = MEMORY"):
        db.execute(f"PRAGMA {pragma}")
    rows_out = []
    all_served: list[float] = []
    all_cpu: list[float] = []
    try:
        for tool in tools:
            served: list[float] = []
            raw: list[float] = []
            raw_hot: list[float] = []
            client: list[float] = []
            server_share: list[float] = []
            server_cpu: list[float] = []
            served_cpu: list[float] = []
            inproc: list[float] = []
            nrows = []
            for query in tool.queries:
                (sv, rw, ip), n = paired_timings(
                    [served_runner(sf, query), raw_runner(org, db, query), inproc_runner(org, query)], reps
                )
                (hot,), _ = paired_timings([raw_runner(org, db, query)], reps)
                raw_hot += hot.wall
                inproc += ip.wall
                served += sv.wall
                raw += rw.wall
                client += sv.own
                server_share += [w - o for w, o in zip(sv.wall, sv.own, strict=True)]
                server_cpu += [c - o for c, o in zip(sv.cpu, sv.own, strict=True)]
                served_cpu += sv.cpu
                nrows.append(n)
            all_served += served
            all_cpu += served_cpu
            rows_out.append(
                {
                    "tool": tool.name,
                    "rows": statistics.mean(nrows),
                    "served_p50": pct(served, 0.5),
                    "served_p95": pct(served, 0.95),
                    "raw_p50": pct(raw, 0.5),
                    "raw_p95": pct(raw, 0.95),
                    "raw_hot_p50": pct(raw_hot, 0.5),
                    "client_p50": pct(client, 0.5),
                    "server_p50": pct(server_share, 0.5),
                    "server_cpu_p50": pct(server_cpu, 0.5),
                    "inproc_p50": pct(inproc, 0.5),
                }
            )
        exports = bulk_exports(sf, org)
        if profile:
            run_profile(org, tools)
    finally:
        server.stop()
        db.close()
    under_load: dict[str, Any] = {}  # after the timings above, which a loaded machine would skew
    if load.seconds > 0:
        under_load["clients"] = concurrent_clients(
            root, tools, load.clients, load.client_processes, load.seconds
        )
        under_load["lookup"] = lookup_under_load(root, tools)
    return {
        "scale": scale,
        "tools": rows_out,
        "bulk": exports,
        "served_p50": pct(all_served, 0.5),
        "served_p95": pct(all_served, 0.95),
        "served_cpu_p50": pct(all_cpu, 0.5),
        "served_cpu_p95": pct(all_cpu, 0.95),
        "load": os.getloadavg()[0],
        "under_load": under_load,
    }


BULK_OBJECTS = ("Case", "CaseHistory__c", "OrderItem")


def bench_ingest(scale: float) -> dict[str, Any]:
    """The bundle of `scale` loaded into a new empty org through Bulk API 2.0 (see the module text)."""
    import tempfile

    from orgs.local.writable.org import WritableOrg
    from orgs.salesforce.load import Loader
    from schemas.model import load_model

    root = build(scale)
    with tempfile.TemporaryDirectory(prefix="orgseed-ingest-") as tmp:
        org = WritableOrg(
            Path(tmp) / "state", edition="enterprise", person_accounts=True, salesforce_licenses=100_000
        )
        server = LocalServer(Path(tmp) / "state", org=org).start()
        try:
            sf = server.client()
            per_object: dict[str, float] = {}
            started: dict[str, float] = {}

            def progress(name: str, done: int, total: int) -> None:
                if name not in started:
                    started[name] = time.perf_counter()
                else:
                    per_object[name] = time.perf_counter() - started[name]

            loader = Loader(sf, root, load_model(), wait=0.05, resume=False, progress=progress)
            calls0 = server.app.state.org.requests
            t0 = time.perf_counter()
            results = loader.run()
            seconds = time.perf_counter() - t0
            calls = server.app.state.org.requests - calls0
        finally:
            server.stop()
            org.close()
    records = sum(r.loaded for r in results)
    jobs = sum(len(r.jobs) for r in results)
    return {
        "scale": scale,
        "records": records,
        "failed": sum(len(r.failed) for r in results),
        "seconds": seconds,
        "records_per_s": records / seconds,
        "api_calls": calls,
        "jobs": jobs,
        "calls_per_job": calls / jobs if jobs else 0.0,
        "slowest": sorted(per_object.items(), key=lambda kv: -kv[1])[:3],
    }


def report_ingest(r: dict[str, Any]) -> None:
    slow = ", ".join(f"{n} {s:.1f} s" for n, s in r["slowest"])
    print(
        f"\nBulk API 2.0 ingest, scale {r['scale']:g}: {r['records']:,} records ({r['failed']} failed) into an empty "
        f"org in {r['seconds']:.1f} s = {r['records_per_s']:,.0f} records/s (target at scale 1: under 30 s); "
        f"{r['api_calls']} API calls for {r['jobs']} jobs (metadata, existence checks and finishing included) = "
        f"{r['calls_per_job']:.1f} calls per job; slowest objects: {slow}"
    )


def bulk_exports(sf: Any, org: LocalOrg) -> list[dict[str, Any]]:
    """Every field of the largest objects exported through Bulk API 2.0 (sf.bulk2 query, 50,000 records a
    page): the whole job from create to the last CSV page, best of three."""
    out = []
    for name in BULK_OBJECTS:
        fields = ", ".join(f.name for f in org.model.get(name).fields)
        soql = f"SELECT {fields} FROM {name}"
        best, records, size = math.inf, 0, 0
        for _ in range(3):
            t = time.perf_counter()
            pages = list(sf.bulk2.__getattr__(name).query(soql, wait=0))
            best = min(best, time.perf_counter() - t)
            records = sum(len(list(csvlib.reader(io.StringIO(page, newline="")))) - 1 for page in pages)
            size = sum(len(page) for page in pages)
        out.append({"object": name, "records": records, "seconds": best, "mb": size / 1e6})
    return out


# -- under load -----------------------------------------------------------------------------------------------

SERVE = (
    "import sys; from pathlib import Path; from orgs.local.serve import LocalServer; "
    "s = LocalServer(Path(sys.argv[1]), token=sys.argv[2]); print(s.url, s.cert_path, flush=True); s.run()"
)
TOKEN = "bench-token"


def serve_process(root: Path) -> tuple[subprocess.Popen[str], str, str]:
    """`orgseed serve`'s server for `root` in a process of its own: (process, url, certificate path)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(root), TOKEN], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    url, cert = proc.stdout.readline().split()
    return proc, url, cert


def client(url: str, cert: str) -> Any:
    from simple_salesforce import Salesforce

    session = requests.Session()
    session.verify = cert
    session.trust_env = False
    return Salesforce(instance_url=url, session_id=TOKEN, session=session, version="59.0")


def run_call(sf: Any, query: str) -> None:
    if query.startswith("FIND"):
        sf.search(query)
    else:
        sf.query_all(query)


def client_process(url: str, cert: str, threads: int, seconds: float, queries: list[str], offset: int) -> Any:
    """One process of clients: `threads` clients running `queries` round robin for `seconds`; returns
    (latencies in ms, errors, first error)."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = time.perf_counter()

    def worker(k: int) -> None:
        sf = client(url, cert)
        i = offset + k * 7
        mine: list[float] = []
        while time.perf_counter() - start < seconds:
            q = queries[i % len(queries)]
            i += 1
            t = time.perf_counter()
            try:
                run_call(sf, q)
            except Exception as exc:  # counted: the target is none
                with lock:
                    errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                continue
            mine.append((time.perf_counter() - t) * 1000)
        with lock:
            latencies.extend(mine)

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return latencies, len(errors), errors[:1]


def concurrent_clients(
    root: Path, tools: list[Tool], clients: int, processes: int, seconds: float
) -> dict[str, Any]:
    from concurrent.futures import ProcessPoolExecutor

    queries = [q for t in tools for q in t.queries]
    proc, url, cert = serve_process(root)
    try:
        run_call(client(url, cert), queries[0])  # the server is up and its caches warm
        per = [clients // processes + (1 if i < clients % processes else 0) for i in range(processes)]
        t = time.perf_counter()
        with ProcessPoolExecutor(max_workers=processes) as pool:
            futures = [
                pool.submit(client_process, url, cert, n, seconds, queries, i * 13) for i, n in enumerate(per)
            ]
            results = [f.result() for f in futures]
        wall = time.perf_counter() - t
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    latencies = sorted(x for r in results for x in r[0])
    errors = sum(r[1] for r in results)
    first = next((r[2][0] for r in results if r[2]), "")
    return {
        "clients": clients,
        "calls": len(latencies),
        "throughput": len(latencies) / wall,
        "p50": pct(latencies, 0.5),
        "p99": pct(latencies, 0.99),
        "errors": errors,
        "first_error": first,
        "load": os.getloadavg()[0],
    }


def heavy_query(terms: int) -> str:
    return "SELECT COUNT() FROM OrderItem WHERE " + " OR ".join(
        f"Product2.Name LIKE '%q{i}z%'" for i in range(terms)
    )


def lookup_under_load(
    root: Path, tools: list[Tool], heavy_clients: int = 3, samples: int = 200
) -> dict[str, Any]:
    lookup = next(t for t in tools if t.name == "get_account_id_by_contact_id").queries[0]
    proc, url, cert = serve_process(root)
    try:
        sf = client(url, cert)
        # size the heavy query to about 100 ms on this machine (the URI allows up to about 300 terms)
        terms = 40
        for attempt in range(4):
            heavy = heavy_query(terms)
            heavy_ms = []
            for _ in range(3):
                t = time.perf_counter()
                sf.query(heavy)
                heavy_ms.append((time.perf_counter() - t) * 1000)
            took = statistics.median(heavy_ms)
            if 80 <= took <= 125 or attempt == 3:
                break
            terms = max(10, min(300, round(terms * 100 / took)))

        def timed(n: int) -> list[float]:
            out = []
            for _ in range(n):
                t = time.perf_counter()
                sf.query(lookup)
                out.append((time.perf_counter() - t) * 1000)
            return sorted(out)

        timed(20)
        alone = timed(samples)
        stop = threading.Event()

        def hammer() -> None:
            mine = client(url, cert)
            while not stop.is_set():
                mine.query(heavy)

        threads = [threading.Thread(target=hammer) for _ in range(heavy_clients)]
        for th in threads:
            th.start()
        time.sleep(0.3)
        loaded = timed(samples)
        stop.set()
        for th in threads:
            th.join()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {
        "heavy_terms": terms,
        "heavy_ms": statistics.median(heavy_ms),
        "alone_p50": pct(alone, 0.5),
        "loaded_p50": pct(loaded, 0.5),
        "loaded_p95": pct(loaded, 0.95),
        "heavy_clients": heavy_clients,
        "load": os.getloadavg()[0],
    }


def run_profile(org: LocalOrg, tools: list[Tool]) -> None:
    from pyinstrument import Profiler

    queries = [q for t in tools for q in t.queries]
    profiler = Profiler(interval=0.0002)
    profiler.start()
    for _ in range(20):
        for q in queries:
            result = org.search(q) if q.startswith("FIND") else org.query(q)
            json.dumps(result, separators=(",", ":"), ensure_ascii=False)
    profiler.stop()
    print(profiler.output_text(unicode=True, color=False, show_all=False), file=sys.stderr)


def report(result: dict[str, Any]) -> None:
    scale = result["scale"]
    print(
        f"\nscale {scale:g}  (ms; served = simple-salesforce over HTTPS, wall; raw = the compiled SQL on sqlite3; "
        "client = the calling thread's CPU: simple-salesforce, requests, TLS, JSON decoding; "
        "server+wire = served − client per call; serving overhead = server+wire − raw; server CPU = the "
        "process's CPU minus the calling thread's per call: the server's own work, which a loaded machine "
        "does not inflate)"
    )
    head = (
        f"{'tool':38} {'rows':>6} {'served p50':>10} {'p95':>7} {'raw p50':>8} {'p95':>7} {'client':>7} "
        f"{'server+wire':>11} {'overhead':>9} {'server CPU':>10}"
    )
    print(head)
    print("-" * len(head))
    for r in result["tools"]:
        print(
            f"{r['tool']:38} {r['rows']:6.0f} {r['served_p50']:10.2f} {r['served_p95']:7.2f} {r['raw_p50']:8.3f} "
            f"{r['raw_p95']:7.3f} {r['client_p50']:7.2f} {r['server_p50']:11.2f} {r['server_p50'] - r['raw_p50']:9.2f} "
            f"{r['server_cpu_p50']:10.2f}"
        )
    print(
        f"all tool queries: served p50 {result['served_p50']:.2f} ms, p95 {result['served_p95']:.2f} ms (wall); "
        f"process CPU p50 {result['served_cpu_p50']:.2f} ms, p95 {result['served_cpu_p95']:.2f} ms; "
        f"load average {result['load']:.1f} on {os.cpu_count()} CPUs"
    )
    raw = sum(r["raw_p50"] for r in result["tools"])
    inproc = sum(r["inproc_p50"] for r in result["tools"])
    served = sum(r["served_p50"] for r in result["tools"])
    client = sum(r["client_p50"] for r in result["tools"])
    server = sum(r["server_p50"] for r in result["tools"])
    print(
        f"Σ over tools, in-process (LocalOrg + JSON, no HTTP): {inproc:.2f} ms; translation overhead "
        f"{inproc - raw:.2f} ms = {(inproc - raw) / raw:.2f}× raw"
    )
    print(
        f"Σ over tools: raw {raw:.2f} ms; served {served:.2f} ms = client {client:.2f} + server and wire "
        f"{server:.2f}; serving overhead (HTTP + translation) {server - raw:.2f} ms = {(server - raw) / raw:.2f}× "
        f"raw (target ≤ 2×); end to end, counting the client's own work: {(served - raw) / raw:.2f}× raw"
    )
    for b in result["bulk"]:
        print(
            f"Bulk API 2.0 export, every field of {b['object']}: {b['records']:,} records ({b['mb']:.1f} MB CSV) in "
            f"{b['seconds']:.2f} s = {b['records'] / b['seconds']:,.0f} records/s"
        )
    c = result["under_load"].get("clients")
    if c:
        print(
            f"{c['clients']} concurrent simple-salesforce clients, tool mix, {c['calls']:,} calls: "
            f"{c['throughput']:.0f} calls/s, p50 {c['p50']:.1f} ms, p99 {c['p99']:.1f} ms, errors {c['errors']} "
            f"(target 0){' — first: ' + c['first_error'] if c['errors'] else ''}; load average {c['load']:.1f}"
        )
    lk = result["under_load"].get("lookup")
    if lk:
        print(
            f"1 ms lookup: p50 {lk['alone_p50']:.2f} ms alone, {lk['loaded_p50']:.2f} ms (p95 {lk['loaded_p95']:.2f}) "
            f"while {lk['heavy_clients']} clients run a {lk['heavy_ms']:.0f} ms query ({lk['heavy_terms']} LIKE "
            f"terms; target under 10 ms); load average {lk['load']:.1f}"
        )
    hot = sum(r["raw_hot_p50"] for r in result["tools"])
    print(
        f"the same against the SQL timed in a hot loop (back to back, caches warm: {hot:.2f} ms): serving "
        f"overhead {(server - hot) / hot:.2f}× raw, end to end {(served - hot) / hot:.2f}× raw"
    )


def time_store_build(root: Path) -> dict[str, Any]:
    """org.sqlite rebuilt from the CSVs in a child process: seconds, and the child's peak RSS."""
    import resource

    code = (
        "import sys, time; from orgs.local.store import Store; t = time.perf_counter(); "
        "Store.open(sys.argv[1], rebuild=True).close(); print(time.perf_counter() - t)"
    )
    load = os.getloadavg()
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)], cwd=REPO, check=True, capture_output=True, text=True
    )
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "seconds": round(float(done.stdout.strip().splitlines()[-1]), 2),
        "peak_mb": round(peak_kb / 1024),
        "store_mb": round((root / "org.sqlite").stat().st_size / 2**20),
        "load_before": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scales", nargs="+", type=float, default=[1.0, 10.0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--variants", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", type=Path, help="Also write the figures to this file.")
    parser.add_argument("--clients", type=int, default=50, help="Concurrent clients of the load test.")
    parser.add_argument(
        "--ingest", action=argparse.BooleanOptionalAction, default=True, help="Time Bulk API 2.0 ingest too."
    )
    parser.add_argument("--ingest-only", action="store_true", help="Only the ingest timings.")
    parser.add_argument("--client-processes", type=int, default=5, help="Processes the clients run in.")
    parser.add_argument(
        "--seconds", type=float, default=15.0, help="Length of the load test (0: no load tests)."
    )
    parser.add_argument(
        "--bundle",
        type=Path,
        help="Benchmark this existing bundle (use a copy: org.sqlite is written into it) instead of building "
        "one per --scales; its scale is read from its manifest.",
    )
    parser.add_argument(
        "--store-build",
        action="store_true",
        help="Also time org.sqlite's build from the CSVs (a child process).",
    )
    args = parser.parse_args()
    if args.bundle is not None:
        scale = float(json.loads((args.bundle / "manifest.json").read_text())["scale"])
        BUNDLES[scale] = args.bundle.resolve()
        args.scales = [scale]
    if args.store_build:
        for s in args.scales:
            info = time_store_build(build(s))
            print(
                f"store build, scale {s:g}: {info['seconds']:.1f} s, peak {info['peak_mb']:,} MB, "
                f"org.sqlite {info['store_mb']:,} MB, load {info['load_before']} → {info['load_after']}",
                flush=True,
            )
    print(f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, today {date.today()}")
    # each part is reported as soon as it is measured (a scale-100 ingest takes many minutes)
    results: list[dict[str, Any]] = []
    for s in [] if args.ingest_only else args.scales:
        results.append(bench_scale(s, args.reps, args.variants, args.profile, args))
        report(results[-1])
        sys.stdout.flush()
    ingests: list[dict[str, Any]] = []
    for s in args.scales if (args.ingest or args.ingest_only) else []:
        ingests.append(bench_ingest(s))
        report_ingest(ingests[-1])
        sys.stdout.flush()
    if args.json:
        args.json.write_text(json.dumps({"queries": results, "ingest": ingests}, indent=2))


if __name__ == "__main__":
    main()
