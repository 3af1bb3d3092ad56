"""The local org's HTTP surface, as the simple-salesforce client uses it: one FastAPI app.

```
GET  /services/data[/]                          API versions (no session needed)
GET  /services/data/vXX.X[/]                    resources of a version
GET  .../query[/]?q=SOQL   .../queryAll[/]?q=   first page (2,000 records, or Sforce-Query-Options batchSize)
GET  .../query/<locator>   .../queryAll/<loc>   following pages (nextRecordsUrl)
GET  .../search[/]?q=SOSL                       {"searchRecords": [...]}
GET  .../sobjects[/]                            global describe
GET  .../sobjects/<Obj>[/]                      basic info;  .../sobjects/<Obj>/describe[/]  full describe
GET  .../sobjects/<Obj>/<Id>[?fields=a,b]       one record; .../sobjects/<Obj>/<ExtIdField>/<value>
GET  .../limits[/]   .../limits/recordCount?sObjects=A,B
POST /services/Soap/u/XX.X[/...]                SOAP login (username + password + security token)
*    .../jobs/query[/<id>[/results]]            Bulk API 2.0 query jobs (orgs/local/bulk.py); ingest: orgs/local/write_api.py (405 on a served bundle)
```

One FastAPI app, one routing stack (its router), one way to authorise a call, one way to fail:

- **Routes**: `rest_routes()`, `bulk_routes()` and `soap_routes()` return Starlette `Route`s whose
  handlers take the request, added to the app's router first. (FastAPI's own path operations are
  welcome beside them, e.g. `app.include_router(...)` for new resources; the read routes are plain routes
  because FastAPI's per-route matching and dependency solving cost a one-row query about 0.3 ms of
  server CPU, twice what the rest of the request costs; measured in the report of this change.)
- **Authorising**: `authorise(request)` (or, in a FastAPI path operation, a parameter typed `Org`, the
  same function as a dependency) checks the `Authorization: Bearer <session token>` header (401
  INVALID_SESSION_ID, in the JSON-list shape simple-salesforce expects, before anything else), then the
  version in the path (404 unless it looks like vNN.N), then that the bundle can be served (503 while a
  changed bundle cannot), and gives the handler an `OrgCall`: the served org, its Bulk API 2.0 jobs, the
  version and `run()`, which runs org work (compiling, SQLite, shaping, JSON) in the worker pool so that
  the event loop stays free for other requests.
- **Failing**: a handler raises `OrgApiError` (or a subclass); `error_response` renders every error:
  Salesforce's JSON error list (`[{"message", "errorCode"}]`) with the error's HTTP status, or a SOAP
  fault on the SOAP login route. Routing errors (unknown path 404, wrong method 405) take the same path.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import os
import re
import secrets
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date
from html import escape
from typing import Annotated, Any, TypeVar

import orjson
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orgs.local.bulk import ADMIN_USER_ID, BulkQueries
from orgs.local.connections import Connections
from orgs.local.describe import describe_basic, describe_global, describe_object
from orgs.local.engine import API_VERSION, LocalOrg
from orgs.local.errors import JSON_TYPE, XML_TYPE, InvalidSession, NotFound, OrgApiError, error_body
from orgs.local.guard import RequestGuard
from orgs.local.limits import DEFAULT_LIMITS, ServeLimits
from orgs.local.served import FixedServed, Served, ServedBundle

VERSIONS = ("52.0", "55.0", "57.0", "58.0", "59.0", "60.0", "61.0", "62.0")
_VERSION_RE = re.compile(r"v(\d{2,3}\.\d)")
_BATCH_RE = re.compile(r"batchSize\s*=\s*(\d{1,9})", re.IGNORECASE)
DAILY_API_REQUESTS = 15000
GET = ["GET", "HEAD"]
QUICK_SECONDS = 0.002  # org work that took less CPU, last time, runs on the event loop (OrgState)
COSTS_KEPT = 4096
WORKER_NICE = 10

log = logging.getLogger("orgseed.local")
T = TypeVar("T")


@dataclass(frozen=True)
class Access:
    """Who may use the org: the session token, and the username/password SOAP login accepts."""

    token: str
    username: str = "admin@orgseed.local"
    password: str | None = None  # password + security token as SOAP sends them; default: the token

    def login_ok(self, username: str, password: str) -> bool:
        expected = self.password if self.password is not None else self.token
        # compared as UTF-8 bytes: compare_digest refuses non-ASCII str
        return secrets.compare_digest(
            username.lower().encode("utf-8", "surrogatepass"), self.username.lower().encode()
        ) and secrets.compare_digest(password.encode("utf-8", "surrogatepass"), expected.encode())


class MethodNotAllowed(OrgApiError):
    def __init__(self, method: str) -> None:
        super().__init__(
            f"HTTP Method '{method}' not allowed. The local org is read-only: allowed are GET,HEAD",
            error_code="METHOD_NOT_ALLOWED",
            status=405,
        )


# -- the one error path -----------------------------------------------------------------------------------


def error_response(exc: OrgApiError, path: str) -> Response:
    body, media_type = error_body(exc, path)
    headers = {"Connection": "close"} if exc.close_connection else None
    return Response(body, status_code=exc.status, headers=headers, media_type=media_type)


def _http_error(request: Request, exc: Exception) -> OrgApiError:
    """Starlette's routing errors (and FastAPI's parameter errors) as the local org's errors."""
    if isinstance(exc, HTTPException):
        if exc.status_code == 404:
            return NotFound()
        if exc.status_code == 405:
            return MethodNotAllowed(request.method)
        return OrgApiError(str(exc.detail), error_code="BAD_REQUEST", status=exc.status_code)
    return OrgApiError(f"The request is malformed: {exc}", error_code="MALFORMED_REQUEST")


class Unexpected:
    """ASGI middleware: an exception that escapes every handler (a bug) is answered 500 UNKNOWN_EXCEPTION
    in the usual error shape, and the connection stays usable (Starlette's own last-resort handler re-raises
    to the server, which then closes the connection). The traceback goes to the `orgseed.local` logger."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            log.exception("unexpected error answering %s %s", scope.get("method"), scope.get("path"))
            if started:
                return
            crash = OrgApiError(
                f"An unexpected error occurred in the local org: {type(exc).__name__}: {exc}",
                error_code="UNKNOWN_EXCEPTION",
                status=500,
            )
            body, media_type = error_body(crash, scope.get("path", ""))
            headers = [(b"content-type", media_type.encode()), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 500, "headers": headers})
            await send({"type": "http.response.body", "body": body})


# -- the one way to authorise a call ---------------------------------------------------------------------


class OrgState:
    """What the app serves: the bundle's org (followed on disk, `served.py`), who may use it, the limits,
    the worker pool, and the number of authorised calls (reported in `Sforce-Limit-Info` and `limits`).

    Org work runs in the worker pool, except work already seen to be quick: a statement (by its text) that
    took under `QUICK_SECONDS` the last time it ran is run on the event loop. Handing work to a thread and
    back costs more than such a query (measured: about 0.2 ms of CPU per call on the benchmark machine,
    against 0.05 ms for a one-row lookup), while everything unknown or slow still runs off the loop, so a
    heavy query never holds up the others.
    """

    def __init__(
        self,
        org: LocalOrg,
        access: Access,
        limits: ServeLimits = DEFAULT_LIMITS,
        *,
        today: date | None = None,
        owned: bool = False,
    ) -> None:
        self.served: ServedBundle | FixedServed = (
            FixedServed(org, owned=owned)
            if getattr(org, "writable", False)
            else ServedBundle(org, today=today, limits=limits, owned=owned)
        )
        self.access = access
        self.limits = limits
        self.token = access.token.encode()
        self.pool = ThreadPoolExecutor(
            max_workers=limits.workers, thread_name_prefix="orgseed-org", initializer=_background_thread
        )
        self.requests = 0
        self.costs: OrderedDict[tuple[int, str], float] = OrderedDict()  # seconds, by (load, work key)

    @property
    def org(self) -> LocalOrg:
        """The org served now."""
        return self.served.current.org

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` in the worker pool (org work never runs on the event loop)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, functools.partial(fn, *args, **kwargs))

    async def measured(self, key: str | None, work: Callable[[], T]) -> T:
        """`work()`: on the event loop when `key`'s last run was quick, else in the worker pool; its CPU
        time (not wall time, which a busy machine inflates) is remembered under `key` (None: always in the
        pool, never remembered)."""
        if key is None:
            return await self.run(work)
        slot = (self.served.reloads, key)
        if self.costs.get(slot, QUICK_SECONDS) < QUICK_SECONDS:
            t = time.thread_time()
            out = work()
            self.remember(slot, time.thread_time() - t)
            return out

        def timed() -> tuple[T, float]:
            t = time.thread_time()
            out = work()
            return out, time.thread_time() - t

        out, seconds = await self.run(timed)
        self.remember(slot, seconds)
        return out

    def remember(self, slot: tuple[int, str], seconds: float) -> None:
        self.costs[slot] = seconds
        self.costs.move_to_end(slot)
        while len(self.costs) > COSTS_KEPT:
            self.costs.popitem(last=False)

    async def served_now(self) -> Served:
        """The served org, reloaded first (in the pool) when the bundle changed on disk."""
        if self.served.changed():
            return await self.run(self.served.get)
        return self.served.get(checked=True)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.served.close()


def _background_thread() -> None:
    """Worker threads yield the CPU to the event loop: on Linux a thread has its own nice value, and at
    +10 the loop (which answers the quick queries) keeps its share while heavy queries fill the cores."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICE)


def _version(value: str) -> str:
    m = _VERSION_RE.fullmatch(value)
    if not m:
        raise NotFound()
    return m.group(1)


@dataclass(frozen=True)
class OrgCall:
    """An authorised call: the org served when it arrived, its Bulk jobs, the API version of the path,
    and the worker pool."""

    state: OrgState
    served: Served
    version: str

    @property
    def org(self) -> LocalOrg:
        return self.served.org

    @property
    def bulk(self) -> BulkQueries:
        return self.served.bulk

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` in the worker pool (org work never runs on the event loop)."""
        return await self.state.run(fn, *args, **kwargs)

    async def json(self, key: str | None, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Response:
        """A JSON answer of `fn(*args, **kwargs)` (a value, or bytes already JSON), computed and encoded in
        the worker pool, or on the event loop when `key` (what identifies this work's cost, e.g. the query
        text) was quick last time."""

        def work() -> bytes:
            out = fn(*args, **kwargs)
            return out if isinstance(out, bytes) else orjson.dumps(out)

        return self.reply(await self.state.measured(key, work))

    def reply(self, body: bytes, status: int = 200) -> Response:
        usage = f"api-usage={self.state.requests}/{DAILY_API_REQUESTS}"
        return Response(body, status, {"Sforce-Limit-Info": usage}, media_type=JSON_TYPE)


def session(request: Request) -> OrgState:
    """The app's org state, once the request's session token (`Authorization: Bearer ...`) is checked;
    401 INVALID_SESSION_ID otherwise. Every authorised route starts here."""
    state: OrgState = request.app.state.org
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() not in ("bearer", "oauth") or not secrets.compare_digest(
        value.strip().encode("utf-8", "surrogateescape"), state.token
    ):
        raise InvalidSession()
    return state


def writable_org(org: LocalOrg, what: str) -> Any:
    """`org` when it takes writes (an empty org, `orgseed serve --empty`); 405 for a served bundle, saying
    what to serve instead. `what`: the refused kind of call, for the message."""
    if not getattr(org, "writable", False):
        raise OrgApiError(
            f"The local org serves a bundle read-only: {what} go to an empty org. Serve one with "
            "`orgseed serve --empty STATE_DIR` and load it there.",
            error_code="METHOD_NOT_ALLOWED",
            status=405,
        )
    return org


async def authorise(request: Request) -> OrgCall:
    """The one check of every `/services/data/{version}/...` call: the session first (401), then the
    version (404), then the bundle (503 while a changed bundle cannot be served)."""
    state = session(request)
    api_version = _version(request.path_params.get("version", ""))
    served = await state.served_now()
    state.requests += 1
    check = getattr(served.org, "check_requests", None)
    if check is not None:
        check(state.requests)
    return OrgCall(state, served, api_version)


async def org_call(request: Request) -> OrgCall:
    """`authorise` as a FastAPI dependency (for path operations: `call: Org`)."""
    return await authorise(request)


Org = Annotated[OrgCall, Depends(org_call)]


# -- the app -----------------------------------------------------------------------------------------------


def create_app(
    org: LocalOrg,
    access: Access,
    limits: ServeLimits = DEFAULT_LIMITS,
    *,
    today: date | None = None,
    owned: bool = False,
    connections: Connections | None = None,
    extra_routes: Sequence[BaseRoute] = (),
) -> FastAPI:
    """The ASGI app serving `org` (and, when its bundle changes on disk, the bundle's new org: `served.py`;
    `today` is the one the server was given, None for each bundle's own). `owned`: the app closes the org.
    No docs/openapi routes: the paths are Salesforce's. `extra_routes` go before the Bulk and SOAP routes (the
    server adds the write routes of `orgs/local/write_api.py` there). Close `app.state.org` (an `OrgState`)
    when done."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, redirect_slashes=False, **_quiet())
    app.state.org = OrgState(org, access, limits, today=today, owned=owned)

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, OrgApiError)
        return error_response(exc, request.url.path)

    async def http_error(request: Request, exc: Exception) -> Response:
        return error_response(_http_error(request, exc), request.url.path)

    app.add_exception_handler(OrgApiError, api_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, http_error)
    app.add_middleware(RequestGuard, limits=limits, connections=connections)
    app.add_middleware(Unexpected)
    app.router.routes.extend([*rest_routes(), *extra_routes, *bulk_routes(), *soap_routes()])
    return app


def _quiet() -> dict[str, Any]:
    """FastAPI's native OpenTelemetry off (FastAPI versions that have it look for a configured provider on
    every request; the local org's own logger says what matters)."""
    if "telemetry" not in inspect.signature(FastAPI).parameters:
        return {}
    off = {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}
    return {"telemetry": off}


Handler = Callable[[Request], Awaitable[Response]]


def _get(routes: list[BaseRoute], path: str, slash: bool = True) -> Callable[[Handler], Handler]:
    """Add a GET (and HEAD) route for `path` and, when `slash`, `path/` too."""

    def register(fn: Handler) -> Handler:
        for p in (path, path + "/") if slash else (path,):
            routes.append(Route(p, fn, methods=GET, include_in_schema=False))
        return fn

    return register


def _route(
    routes: list[BaseRoute], paths: tuple[str, ...], methods: list[str]
) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for p in paths:
            routes.append(Route(p, fn, methods=methods, include_in_schema=False))
        return fn

    return register


def _param(request: Request, name: str) -> str | None:
    return request.query_params.get(name)


def _required(request: Request, name: str, code: str) -> str:
    value = request.query_params.get(name)
    if value is None:
        what = "search" if code == "MALFORMED_SEARCH" else "query"
        raise OrgApiError(f"A {what} string is required: pass it as the {name} parameter.", error_code=code)
    return value


def rest_routes() -> list[BaseRoute]:
    """The REST resources of `/services/data` (the query routes first: they are the hot path)."""
    routes: list[BaseRoute] = []
    v = "/services/data/{version}"

    @_get(routes, v + "/query")
    @_get(routes, v + "/queryAll")
    async def query(request: Request) -> Response:
        call = await authorise(request)
        q = _required(request, "q", "MALFORMED_QUERY")
        m = _BATCH_RE.search(request.headers.get("sforce-query-options", ""))
        include_deleted = request.scope["path"].rstrip("/").endswith("/queryAll")
        batch = int(m.group(1)) if m else None
        key = f"query:{include_deleted}:{batch}:{q}"
        return await call.json(
            key, call.org.query_json, q, call.version, include_deleted=include_deleted, batch=batch
        )

    @_get(routes, v + "/query/{locator}", slash=False)
    @_get(routes, v + "/queryAll/{locator}", slash=False)
    async def query_more(request: Request) -> Response:
        call = await authorise(request)
        locator = request.path_params["locator"]
        key = call.org.page_key(locator)  # a following page of a query whose pages were quick: on the loop
        return await call.json(key, call.org.query_more_json, locator, call.version)

    @_get(routes, v + "/search")
    async def search(request: Request) -> Response:
        call = await authorise(request)
        q = _required(request, "q", "MALFORMED_SEARCH")
        return await call.json(f"search:{q}", call.org.search, q, call.version)

    @_get(routes, "/services/data")
    async def versions(request: Request) -> Response:
        body = [{"label": f"v{x}", "url": f"/services/data/v{x}", "version": x} for x in VERSIONS]
        return Response(orjson.dumps(body), media_type=JSON_TYPE)

    @_get(routes, v)
    async def resources(request: Request) -> Response:
        call = await authorise(request)
        base = f"/services/data/v{call.version}"
        names = ("sobjects", "query", "queryAll", "search", "limits")
        return call.reply(orjson.dumps({n: f"{base}/{n}" for n in names}))

    @_get(routes, v + "/sobjects")
    async def sobjects(request: Request) -> Response:
        call = await authorise(request)
        return await call.json("sobjects", describe_global, call.org.model, call.version)

    @_get(routes, v + "/sobjects/{name}")
    async def sobject(request: Request) -> Response:
        call = await authorise(request)
        spec = call.org.sobject(request.path_params["name"])
        return call.reply(orjson.dumps(describe_basic(spec, call.version)))

    @_get(routes, v + "/sobjects/{name}/describe")
    async def describe(request: Request) -> Response:
        call = await authorise(request)
        spec = call.org.sobject(request.path_params["name"])
        return await call.json(f"describe:{spec.name}", describe_object, call.org.model, spec, call.version)

    @_get(routes, v + "/sobjects/{name}/{record_id}", slash=False)
    async def record(request: Request) -> Response:
        call = await authorise(request)
        fields_param = _param(request, "fields")
        fields = [f.strip() for f in fields_param.split(",") if f.strip()] if fields_param else None
        p = request.path_params
        key = f"record:{p['name']}:{fields_param}"
        return await call.json(key, call.org.record, p["name"], p["record_id"], fields, call.version)

    @_get(routes, v + "/sobjects/{name}/{field}/{value:path}", slash=False)
    async def record_by_external_id(request: Request) -> Response:
        call = await authorise(request)
        p = request.path_params
        value = p["value"].replace("+", " ")
        key = f"external:{p['name']}:{p['field']}"
        return await call.json(
            key, call.org.record_by_external_id, p["name"], p["field"], value, call.version
        )

    @_get(routes, v + "/limits")
    async def limits(request: Request) -> Response:
        call = await authorise(request)
        own = getattr(call.org, "limits", None)
        return call.reply(orjson.dumps(own(call.state.requests) if own else org_limits(call.state.requests)))

    @_get(routes, v + "/limits/recordCount", slash=False)
    async def record_count(request: Request) -> Response:
        call = await authorise(request)
        names = _param(request, "sObjects")
        wanted = [n.strip() for n in names.split(",") if n.strip()] if names else None
        return await call.json(None, lambda: {"sObjects": call.org.record_counts(wanted)})

    return routes


def org_limits(requests: int) -> dict[str, dict[str, int]]:
    """A plausible limits map; DailyApiRequests counts this org's REST calls."""
    fixed = {
        "DailyApiRequests": DAILY_API_REQUESTS,
        "DailyAsyncApexExecutions": 250000,
        "DailyBulkApiBatches": 15000,
        "DailyBulkV2QueryFileStorageMB": 976562,
        "DailyBulkV2QueryJobs": 10000,
        "DailyStreamingApiEvents": 10000,
        "DailyWorkflowEmails": 2000,
        "DataStorageMB": 1024,
        "FileStorageMB": 2048,
        "HourlyTimeBasedWorkflow": 50,
        "MassEmail": 10,
        "SingleEmail": 15,
        "StreamingApiConcurrentClients": 20,
    }
    out = {name: {"Max": cap, "Remaining": cap} for name, cap in fixed.items()}
    out["DailyApiRequests"]["Remaining"] = max(0, DAILY_API_REQUESTS - requests)
    return out


# -- Bulk API 2.0 --------------------------------------------------------------------------------------------


async def _json_body(request: Request) -> Any:
    try:
        return orjson.loads(await request.body())
    except orjson.JSONDecodeError as exc:
        raise OrgApiError(
            f"The request body is not valid JSON: {exc}", error_code="JSON_PARSER_ERROR"
        ) from exc


def bulk_routes() -> list[BaseRoute]:
    """Bulk API 2.0: query jobs (orgs/local/bulk.py); ingest jobs are refused, the org being read-only."""
    routes: list[BaseRoute] = []
    jobs = "/services/data/{version}/jobs"

    @_route(routes, (jobs + "/query", jobs + "/query/"), ["POST"])
    async def create(request: Request) -> Response:
        call = await authorise(request)
        body = await _json_body(request)
        return await call.json(None, call.bulk.create, body, call.version)

    @_get(routes, jobs + "/query")
    async def list_jobs(request: Request) -> Response:
        call = await authorise(request)
        return await call.json(None, call.bulk.all)

    @_route(routes, (jobs + "/query/{job_id}",), ["GET", "HEAD", "PATCH", "DELETE"])
    async def job(request: Request) -> Response:
        call = await authorise(request)
        job_id = request.path_params["job_id"]
        if request.method == "PATCH":
            call.bulk.set_state(job_id, await _json_body(request))  # refuses: jobs complete when created
        if request.method == "DELETE":
            call.bulk.delete(job_id)
            return Response(status_code=204)
        return call.reply(orjson.dumps(call.bulk.info(job_id)))

    @_get(routes, jobs + "/query/{job_id}/results", slash=False)
    async def results(request: Request) -> Response:
        call = await authorise(request)
        params = request.query_params
        body, count, locator = await call.run(
            call.bulk.results,
            request.path_params["job_id"],
            call.version,
            params.get("maxRecords"),
            params.get("locator"),
        )
        headers = {"Sforce-NumberOfRecords": str(count), "Sforce-Locator": locator}
        return Response(body, media_type="text/csv; charset=UTF-8", headers=headers)

    @_route(
        routes,
        (jobs + "/ingest", jobs + "/ingest/{rest_of_path:path}"),
        [*GET, "POST", "PUT", "PATCH", "DELETE"],
    )
    async def ingest(request: Request) -> Response:
        await authorise(request)
        raise OrgApiError(
            "The local org is read-only: Bulk API 2.0 ingest jobs (insert, update, upsert, delete) are not "
            "supported here; query jobs are.",
            error_code="METHOD_NOT_ALLOWED",
            status=405,
        )

    return routes


# -- SOAP login ----------------------------------------------------------------------------------------------

_LOGIN_OK = (
    '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope '
    'xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns="urn:partner.soap.sforce.com" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body><loginResponse><result>'
    "<metadataServerUrl>{base}/services/Soap/m/{version}/{org_id}</metadataServerUrl>"
    "<passwordExpired>false</passwordExpired><sandbox>false</sandbox>"
    "<serverUrl>{base}/services/Soap/u/{version}/{org_id}</serverUrl>"
    "<sessionId>{session}</sessionId><userId>{user_id}</userId>"
    "<userInfo><organizationId>{org_id}</organizationId><userName>{username}</userName>"
    "<userId>{user_id}</userId></userInfo></result></loginResponse></soapenv:Body></soapenv:Envelope>"
)
INVALID_LOGIN = "Invalid username, password, security token; or user locked out."


class SoapFault(OrgApiError):
    """A SOAP login refused (rendered as a SOAP fault by `error_response`). Salesforce sends SOAP faults
    with status 500, as SOAP 1.1 has it; the local org sends 400, keeping 5xx for its own failures
    (simple-salesforce reads the fault from any non-200 answer)."""

    def __init__(self, message: str = INVALID_LOGIN, code: str = "INVALID_LOGIN") -> None:
        super().__init__(message, error_code=code, status=400)


def soap_routes() -> list[BaseRoute]:
    """The SOAP login (simple-salesforce's username + password + security token)."""
    routes: list[BaseRoute] = []

    @_route(routes, ("/services/Soap/u/{version}", "/services/Soap/u/{version}/{rest:path}"), ["POST"])
    async def login(request: Request) -> Response:
        state: OrgState = request.app.state.org
        version = request.path_params["version"]
        body = await request.body()  # at most ServeLimits.max_login_bytes (guard.py)
        try:
            root = ET.fromstring(body)
        except ET.ParseError:
            raise SoapFault("The login request is not well-formed XML.", "soapenv:Client") from None
        values = {el.tag.rsplit("}", 1)[-1].lower(): (el.text or "") for el in root.iter()}
        if "username" not in values or "password" not in values:
            raise SoapFault()
        if not state.access.login_ok(values["username"], values["password"]):
            raise SoapFault()
        base = f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"
        text = _LOGIN_OK.format(
            base=escape(base),
            version=escape(version),
            org_id=state.org.org_id,
            session=escape(state.access.token),
            user_id=getattr(state.org, "api_user_id", ADMIN_USER_ID),
            username=escape(state.access.username),
        )
        return Response(text, media_type=XML_TYPE)

    return routes


__all__ = [
    "API_VERSION",
    "Access",
    "Org",
    "OrgApiError",
    "OrgCall",
    "OrgState",
    "authorise",
    "create_app",
    "error_response",
    "org_limits",
    "session",
    "writable_org",
]
