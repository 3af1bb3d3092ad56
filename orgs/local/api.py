"""The REST surface of the local org, as the simple-salesforce client uses it.

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
*    .../jobs/query[/<id>[/results]]            Bulk API 2.0 query jobs (orgs/local/bulk.py); ingest: 405
```

Every call but the version list needs `Authorization: Bearer <session token>` (401 INVALID_SESSION_ID
otherwise, in the JSON-list shape simple-salesforce expects). Errors are Salesforce error lists with the
matching status.

The ASGI app (`create_app`) answers the `/services/data` routes of `RestApi` itself, a table of path
patterns and plain handlers, and passes every other request to a FastAPI app: the SOAP login and Bulk
API 2.0 routers, and any router added later. The REST routes skip FastAPI because its request machinery
cost about a third of the server's time on a one-row CRMArena tool query.
"""

from __future__ import annotations

import re
import secrets
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import parse_qsl

import orjson
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response

from orgs.local.bulk import ADMIN_USER_ID, BulkQueries
from orgs.local.describe import describe_basic, describe_global, describe_object
from orgs.local.engine import API_VERSION, LocalOrg
from orgs.local.errors import InvalidSession, NotFound, OrgApiError

VERSIONS = ("52.0", "55.0", "57.0", "58.0", "59.0", "60.0", "61.0", "62.0")
_VERSION_RE = re.compile(r"^v(\d{2,3}\.\d)$")
_BATCH_RE = re.compile(r"batchSize\s*=\s*(\d+)", re.IGNORECASE)
DAILY_API_REQUESTS = 15000
MAX_LOGIN_BODY = 64 * 1024


@dataclass(frozen=True)
class Access:
    """Who may use the org: the session token, and the username/password SOAP login accepts."""

    token: str
    username: str = "admin@orgseed.local"
    password: str | None = None  # password + security token as SOAP sends them; default: the token

    def login_ok(self, username: str, password: str) -> bool:
        expected = self.password if self.password is not None else self.token
        return secrets.compare_digest(username.lower(), self.username.lower()) and secrets.compare_digest(
            password, expected
        )


def _json(payload: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json;charset=UTF-8")


def _error(exc: OrgApiError) -> Response:
    return _json(exc.to_json(), exc.status)


def _version(value: str) -> str:
    m = _VERSION_RE.match(value)
    if not m:
        raise NotFound()
    return m.group(1)


def create_app(org: LocalOrg, access: Access) -> LocalOrgApp:
    """The ASGI app serving `org`: the REST surface in front, FastAPI (SOAP login, and whatever a future
    router adds) behind it. No docs/openapi routes: the paths are Salesforce's."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.state.org = org
    app.state.access = access

    @app.exception_handler(OrgApiError)
    async def api_error(request: Request, exc: OrgApiError) -> Response:
        return _error(exc)

    @app.exception_handler(404)
    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(NotFound())

    @app.exception_handler(405)
    async def not_allowed(request: Request, exc: Exception) -> Response:
        return _error(MethodNotAllowed(request.method))

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> Response:  # pragma: no cover - a bug
        return _json(_crash_body(exc), 500)

    rest = RestApi(org, access)
    app.include_router(soap_router(org, access))
    app.include_router(bulk_router(BulkQueries(org), rest))
    return LocalOrgApp(rest, app)


class MethodNotAllowed(OrgApiError):
    def __init__(self, method: str) -> None:
        super().__init__(
            f"HTTP Method '{method}' not allowed. The local org is read-only: allowed are GET,HEAD",
            error_code="METHOD_NOT_ALLOWED",
            status=405,
        )


def _crash_body(exc: Exception) -> list[dict[str, str]]:
    return [
        {
            "message": f"An unexpected error occurred in the local org: {type(exc).__name__}: {exc}",
            "errorCode": "UNKNOWN_EXCEPTION",
        }
    ]


# -- the REST surface -----------------------------------------------------------------------------------------


class Call:
    """One REST request, as the handlers read it: path, path parameters, query string and headers."""

    __slots__ = ("_headers", "params", "path", "query")

    def __init__(self, scope: Mapping[str, Any], params: dict[str, str]) -> None:
        self.path: str = scope["path"]
        self.params = params
        # as Starlette reads it: latin-1 text, %-escapes decoded as UTF-8, the last of repeated names
        self.query = dict(parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True))
        self._headers: list[tuple[bytes, bytes]] = scope["headers"]

    def header(self, name: bytes) -> str:
        """The first header of this (lower-case) name, or "" (ASGI servers lower-case header names)."""
        for key, value in self._headers:
            if key == name:
                return value.decode("latin-1")
        return ""


@dataclass(frozen=True)
class Reply:
    body: bytes
    status: int = 200
    usage: bool = True  # send Sforce-Limit-Info


Handler = Callable[[Call], Reply]
_SEG = r"(?P<{}>[^/]+)"


def _pattern(template: str, slash: bool = True) -> re.Pattern[str]:
    """`/services/data/{version}/sobjects/{name}` → a full-match regex (with an optional trailing slash
    when `slash`); `{x}` is one path segment, `{x:path}` the rest of the path."""
    parts = re.split(r"(\{\w+(?::path)?\})", template)
    out = []
    for part in parts:
        if part.startswith("{"):
            name, _, kind = part[1:-1].partition(":")
            out.append(f"(?P<{name}>.+)" if kind == "path" else _SEG.format(name))
        else:
            out.append(re.escape(part))
    return re.compile("".join(out) + ("/?" if slash else ""))


class RestApi:
    """The REST routes of `/services/data` as a table of (path pattern, handler), tried in order.

    These routes are served by `LocalOrgApp` ahead of FastAPI: each handler reads its own parameters and
    needs none of FastAPI's request machinery (middleware stack, router, Request objects), which cost about
    135 µs of the 450 µs of server CPU a one-row query took at scale 10 (A/B in one process, same org).
    """

    def __init__(self, org: LocalOrg, access: Access) -> None:
        self.org = org
        self.token = access.token.encode()
        v = "/services/data/{version}"
        self.routes: list[tuple[re.Pattern[str], Handler]] = [
            (_pattern(v + "/query"), self.query),
            (_pattern(v + "/queryAll"), self.query),
            (_pattern(v + "/search"), self.search),
            (_pattern(v + "/query/{locator}", slash=False), self.query_more),
            (_pattern(v + "/queryAll/{locator}", slash=False), self.query_more),
            (_pattern("/services/data"), self.versions),
            (_pattern(v), self.resources),
            (_pattern(v + "/sobjects"), self.sobjects),
            (_pattern(v + "/sobjects/{name}"), self.sobject),
            (_pattern(v + "/sobjects/{name}/describe"), self.describe),
            (_pattern(v + "/sobjects/{name}/{record_id}", slash=False), self.record),
            (_pattern(v + "/sobjects/{name}/{field}/{value:path}", slash=False), self.record_by_external_id),
            (_pattern(v + "/limits"), self.limits),
            (_pattern(v + "/limits/recordCount", slash=False), self.record_count),
        ]

    def route(self, path: str) -> tuple[Handler, dict[str, str]] | None:
        for pattern, handler in self.routes:
            m = pattern.fullmatch(path)
            if m:
                return handler, m.groupdict()
        return None

    # -- helpers

    def authorise(self, call: Call) -> str:
        """The API version the call names, checked once its session token is: 401 before 404."""
        scheme, _, value = call.header(b"authorization").partition(" ")
        if scheme.lower() not in ("bearer", "oauth") or not secrets.compare_digest(
            value.strip().encode(), self.token
        ):
            raise InvalidSession()
        self.org.requests += 1
        return _version(call.params["version"])

    @staticmethod
    def required(call: Call, name: str, code: str) -> str:
        value = call.query.get(name)
        if value is None:
            what = "search" if code == "MALFORMED_SEARCH" else "query"
            raise OrgApiError(
                f"A {what} string is required: pass it as the {name} parameter.", error_code=code
            )
        return value

    # -- handlers

    def versions(self, call: Call) -> Reply:
        body = [{"label": f"v{v}", "url": f"/services/data/v{v}", "version": v} for v in VERSIONS]
        return Reply(orjson.dumps(body), usage=False)

    def resources(self, call: Call) -> Reply:
        base = f"/services/data/v{self.authorise(call)}"
        names = ("sobjects", "query", "queryAll", "search", "limits")
        return Reply(orjson.dumps({n: f"{base}/{n}" for n in names}))

    def query(self, call: Call) -> Reply:
        version = self.authorise(call)
        q = self.required(call, "q", "MALFORMED_QUERY")
        m = _BATCH_RE.search(call.header(b"sforce-query-options"))
        result = self.org.query(
            q,
            version,
            include_deleted="/queryAll" in call.path,
            batch=int(m.group(1)) if m else None,
        )
        return Reply(orjson.dumps(result))

    def query_more(self, call: Call) -> Reply:
        version = self.authorise(call)
        return Reply(orjson.dumps(self.org.query_more(call.params["locator"], version)))

    def search(self, call: Call) -> Reply:
        version = self.authorise(call)
        q = self.required(call, "q", "MALFORMED_SEARCH")
        return Reply(orjson.dumps(self.org.search(q, version)))

    def sobjects(self, call: Call) -> Reply:
        version = self.authorise(call)
        return Reply(orjson.dumps(describe_global(self.org.model, version)))

    def sobject(self, call: Call) -> Reply:
        version = self.authorise(call)
        return Reply(orjson.dumps(describe_basic(self.org.sobject(call.params["name"]), version)))

    def describe(self, call: Call) -> Reply:
        version = self.authorise(call)
        spec = self.org.sobject(call.params["name"])
        return Reply(orjson.dumps(describe_object(self.org.model, spec, version)))

    def record(self, call: Call) -> Reply:
        version = self.authorise(call)
        fields_param = call.query.get("fields")
        fields = [f.strip() for f in fields_param.split(",") if f.strip()] if fields_param else None
        p = call.params
        return Reply(orjson.dumps(self.org.record(p["name"], p["record_id"], fields, version)))

    def record_by_external_id(self, call: Call) -> Reply:
        version = self.authorise(call)
        p = call.params
        value = p["value"].replace("+", " ")
        return Reply(orjson.dumps(self.org.record_by_external_id(p["name"], p["field"], value, version)))

    def limits(self, call: Call) -> Reply:
        self.authorise(call)
        return Reply(orjson.dumps(org_limits(self.org)))

    def record_count(self, call: Call) -> Reply:
        self.authorise(call)
        names = call.query.get("sObjects")
        wanted = [n.strip() for n in names.split(",") if n.strip()] if names else None
        return Reply(orjson.dumps({"sObjects": self.org.record_counts(wanted)}))


_JSON_TYPE = (b"content-type", b"application/json;charset=UTF-8")


class LocalOrgApp:
    """The ASGI app: `RestApi` routes answered directly, everything else passed to FastAPI (`.fastapi`,
    where further routers, e.g. Bulk API 2.0, are included)."""

    def __init__(self, rest: RestApi, fastapi: FastAPI) -> None:
        self.rest = rest
        self.fastapi = fastapi

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.fastapi(scope, receive, send)
            return
        path: str = scope["path"]
        found = self.rest.route(path) if path.startswith("/services/data") else None
        if found is None:
            await self.fastapi(scope, receive, send)
            return
        handler, params = found
        method: str = scope["method"]
        reply = self.answer(handler, params, scope) if method in ("GET", "HEAD") else None
        if reply is None:
            reply = Reply(orjson.dumps(MethodNotAllowed(method).to_json()), 405, usage=False)
        headers = [_JSON_TYPE, (b"content-length", str(len(reply.body)).encode())]
        if reply.usage:
            usage = f"api-usage={self.rest.org.requests}/{DAILY_API_REQUESTS}"
            headers.append((b"sforce-limit-info", usage.encode()))
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else reply.body})

    def answer(self, handler: Handler, params: dict[str, str], scope: dict[str, Any]) -> Reply:
        try:
            return handler(Call(scope, params))
        except OrgApiError as exc:
            return Reply(orjson.dumps(exc.to_json()), exc.status, usage=False)
        except Exception as exc:  # pragma: no cover - a bug
            return Reply(orjson.dumps(_crash_body(exc)), 500, usage=False)


def bulk_router(jobs: BulkQueries, rest: RestApi) -> APIRouter:
    """Bulk API 2.0: query jobs (orgs/local/bulk.py); ingest jobs are refused, the org being read-only."""
    router = APIRouter(prefix="/services/data/{version}/jobs")

    def authorise(request: Request) -> str:
        return rest.authorise(Call(request.scope, dict(request.path_params)))

    async def json_body(request: Request) -> Any:
        try:
            return orjson.loads(await request.body())
        except orjson.JSONDecodeError as exc:
            raise OrgApiError(
                f"The request body is not valid JSON: {exc}", error_code="JSON_PARSER_ERROR"
            ) from exc

    @router.post("/query")
    @router.post("/query/")
    async def create(request: Request) -> Response:
        version = authorise(request)
        return _json(jobs.create(await json_body(request), version))

    @router.get("/query")
    @router.get("/query/")
    async def list_jobs(request: Request) -> Response:
        authorise(request)
        return _json(jobs.all())

    @router.get("/query/{job_id}")
    async def info(request: Request, job_id: str) -> Response:
        authorise(request)
        return _json(jobs.info(job_id))

    @router.patch("/query/{job_id}")
    async def set_state(request: Request, job_id: str) -> Response:
        authorise(request)
        jobs.set_state(job_id, await json_body(request))  # always refuses: jobs complete when created

    @router.delete("/query/{job_id}")
    async def delete(request: Request, job_id: str) -> Response:
        authorise(request)
        jobs.delete(job_id)
        return Response(status_code=204)

    @router.get("/query/{job_id}/results")
    async def results(request: Request, job_id: str) -> Response:
        version = authorise(request)
        params = request.query_params
        body, count, locator = jobs.results(job_id, version, params.get("maxRecords"), params.get("locator"))
        headers = {"Sforce-NumberOfRecords": str(count), "Sforce-Locator": locator}
        return Response(body, media_type="text/csv; charset=UTF-8", headers=headers)

    @router.api_route("/ingest", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    @router.api_route("/ingest/{rest_of_path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    async def ingest(request: Request) -> Response:
        authorise(request)
        raise OrgApiError(
            "The local org is read-only: Bulk API 2.0 ingest jobs (insert, update, upsert, delete) are not "
            "supported here; query jobs are.",
            error_code="METHOD_NOT_ALLOWED",
            status=405,
        )

    return router


def org_limits(org: LocalOrg) -> dict[str, dict[str, int]]:
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
    out["DailyApiRequests"]["Remaining"] = max(0, DAILY_API_REQUESTS - org.requests)
    return out


# -- SOAP login -----------------------------------------------------------------------------------------------

_LOGIN_FAULT = (
    '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope '
    'xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:sf="urn:fault.partner.soap.sforce.com" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body><soapenv:Fault>'
    "<faultcode>{code}</faultcode><faultstring>{code}: {message}</faultstring><detail>"
    '<sf:LoginFault xsi:type="sf:LoginFault"><sf:exceptionCode>{code}</sf:exceptionCode>'
    "<sf:exceptionMessage>{message}</sf:exceptionMessage></sf:LoginFault></detail></soapenv:Fault>"
    "</soapenv:Body></soapenv:Envelope>"
)
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


def soap_router(org: LocalOrg, access: Access) -> APIRouter:
    router = APIRouter()

    def fault(code: str, message: str, status: int = 500) -> Response:
        body = _LOGIN_FAULT.format(code=code, message=escape(message))
        return Response(body, status_code=status, media_type="text/xml;charset=UTF-8")

    @router.post("/services/Soap/u/{version}")
    @router.post("/services/Soap/u/{version}/{rest:path}")
    async def login(request: Request, version: str) -> Response:
        body = await request.body()
        if len(body) > MAX_LOGIN_BODY:
            return fault("INVALID_LOGIN", "The login request is too large.")
        try:
            root = ET.fromstring(body)
        except ET.ParseError:
            return fault("soapenv:Client", "The login request is not well-formed XML.")
        values = {el.tag.rsplit("}", 1)[-1].lower(): (el.text or "") for el in root.iter()}
        if "username" not in values or "password" not in values:
            return fault("INVALID_LOGIN", "Invalid username, password, security token; or user locked out.")
        if not access.login_ok(values["username"], values["password"]):
            return fault("INVALID_LOGIN", "Invalid username, password, security token; or user locked out.")
        base = f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"
        body_text = _LOGIN_OK.format(
            base=escape(base),
            version=escape(version),
            org_id=org.org_id,
            session=escape(access.token),
            user_id=ADMIN_USER_ID,
            username=escape(access.username),
        )
        return Response(body_text, media_type="text/xml;charset=UTF-8")

    return router


__all__ = ["API_VERSION", "Access", "LocalOrgApp", "RestApi", "create_app", "org_limits", "soap_router"]
