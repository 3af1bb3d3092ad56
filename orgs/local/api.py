"""The REST surface of the local org (FastAPI), as the simple-salesforce client uses it.

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
```

Every call but the version list needs `Authorization: Bearer <session token>` (401 INVALID_SESSION_ID
otherwise, in the JSON-list shape simple-salesforce expects). Errors are Salesforce error lists with the
matching status. The app is assembled from routers (`rest_router`, `soap_router`) so a Bulk API 2.0
router (`/services/data/vXX.X/jobs/...`) can be added beside them, reusing `LocalOrg.run_soql`.
"""

from __future__ import annotations

import re
import secrets
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from html import escape
from typing import Any

import orjson
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response

from orgs.local.describe import describe_basic, describe_global, describe_object
from orgs.local.engine import API_VERSION, LocalOrg
from orgs.local.errors import InvalidSession, NotFound, OrgApiError

VERSIONS = ("52.0", "55.0", "57.0", "58.0", "59.0", "60.0", "61.0", "62.0")
_VERSION_RE = re.compile(r"^v(\d{2,3}\.\d)$")
_BATCH_RE = re.compile(r"batchSize\s*=\s*(\d+)", re.IGNORECASE)
DAILY_API_REQUESTS = 15000
Endpoint = Callable[[Request], Awaitable[Response]]
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


def _json(payload: Any, status: int = 200, org: LocalOrg | None = None) -> Response:
    body = orjson.dumps(payload)
    headers = {}
    if org is not None:
        headers["Sforce-Limit-Info"] = f"api-usage={org.requests}/{DAILY_API_REQUESTS}"
    return Response(body, status_code=status, media_type="application/json;charset=UTF-8", headers=headers)


def _error(exc: OrgApiError) -> Response:
    return _json(exc.to_json(), exc.status)


def _version(value: str) -> str:
    m = _VERSION_RE.match(value)
    if not m:
        raise NotFound()
    return m.group(1)


def create_app(org: LocalOrg, access: Access) -> FastAPI:
    """The ASGI app serving `org` (no docs/openapi routes: the paths are Salesforce's)."""
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
        return _error(
            OrgApiError(
                f"HTTP Method '{request.method}' not allowed. The local org is read-only: allowed are GET,HEAD",
                error_code="METHOD_NOT_ALLOWED",
                status=405,
            )
        )

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> Response:  # pragma: no cover - a bug
        return _json(
            [
                {
                    "message": f"An unexpected error occurred in the local org: {type(exc).__name__}: {exc}",
                    "errorCode": "UNKNOWN_EXCEPTION",
                }
            ],
            500,
        )

    app.include_router(rest_router(org, access))
    app.include_router(soap_router(org, access))
    return app


def rest_router(org: LocalOrg, access: Access) -> APIRouter:
    """The REST routes. They are plain (Starlette) routes: every endpoint reads its own parameters, so
    FastAPI's per-request dependency injection would only add latency (about 0.15 ms a call)."""
    router = APIRouter()
    token = access.token.encode()

    def get(*paths: str) -> Callable[[Endpoint], Endpoint]:
        def register(endpoint: Endpoint) -> Endpoint:
            for path in paths:
                router.add_route(path, endpoint, methods=["GET"])
            return endpoint

        return register

    def authorise(request: Request) -> str:
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() not in ("bearer", "oauth") or not secrets.compare_digest(
            value.strip().encode(), token
        ):
            raise InvalidSession()
        org.requests += 1
        return _version(request.path_params["version"])

    def batch_size(request: Request) -> int | None:
        m = _BATCH_RE.search(request.headers.get("sforce-query-options", ""))
        return int(m.group(1)) if m else None

    def required(request: Request, name: str, code: str) -> str:
        value = request.query_params.get(name)
        if value is None:
            what = "search" if code == "MALFORMED_SEARCH" else "query"
            raise OrgApiError(
                f"A {what} string is required: pass it as the {name} parameter.", error_code=code
            )
        return value

    @get("/services/data", "/services/data/")
    async def versions(request: Request) -> Response:
        return _json([{"label": f"v{v}", "url": f"/services/data/v{v}", "version": v} for v in VERSIONS])

    @get("/services/data/{version}", "/services/data/{version}/")
    async def resources(request: Request) -> Response:
        base = f"/services/data/v{authorise(request)}"
        names = ("sobjects", "query", "queryAll", "search", "limits")
        return _json({n: f"{base}/{n}" for n in names}, org=org)

    @get(
        "/services/data/{version}/query",
        "/services/data/{version}/query/",
        "/services/data/{version}/queryAll",
        "/services/data/{version}/queryAll/",
    )
    async def query(request: Request) -> Response:
        v = authorise(request)
        q = required(request, "q", "MALFORMED_QUERY")
        include_deleted = "/queryAll" in request.url.path
        return _json(org.query(q, v, include_deleted=include_deleted, batch=batch_size(request)), org=org)

    @get("/services/data/{version}/query/{locator}", "/services/data/{version}/queryAll/{locator}")
    async def query_more(request: Request) -> Response:
        v = authorise(request)
        return _json(org.query_more(request.path_params["locator"], v), org=org)

    @get("/services/data/{version}/search", "/services/data/{version}/search/")
    async def search(request: Request) -> Response:
        v = authorise(request)
        return _json(org.search(required(request, "q", "MALFORMED_SEARCH"), v), org=org)

    @get("/services/data/{version}/sobjects", "/services/data/{version}/sobjects/")
    async def sobjects(request: Request) -> Response:
        return _json(describe_global(org.model, authorise(request)), org=org)

    @get("/services/data/{version}/sobjects/{name}", "/services/data/{version}/sobjects/{name}/")
    async def sobject(request: Request) -> Response:
        v = authorise(request)
        return _json(describe_basic(org.sobject(request.path_params["name"]), v), org=org)

    @get(
        "/services/data/{version}/sobjects/{name}/describe",
        "/services/data/{version}/sobjects/{name}/describe/",
    )
    async def describe(request: Request) -> Response:
        v = authorise(request)
        return _json(describe_object(org.model, org.sobject(request.path_params["name"]), v), org=org)

    @get("/services/data/{version}/sobjects/{name}/{record_id}")
    async def record(request: Request) -> Response:
        v = authorise(request)
        fields_param = request.query_params.get("fields")
        fields = [f.strip() for f in fields_param.split(",") if f.strip()] if fields_param else None
        p = request.path_params
        return _json(org.record(p["name"], p["record_id"], fields, v), org=org)

    @get("/services/data/{version}/sobjects/{name}/{field}/{value:path}")
    async def record_by_external_id(request: Request) -> Response:
        v = authorise(request)
        p = request.path_params
        return _json(
            org.record_by_external_id(p["name"], p["field"], p["value"].replace("+", " "), v), org=org
        )

    @get("/services/data/{version}/limits", "/services/data/{version}/limits/")
    async def limits(request: Request) -> Response:
        authorise(request)
        return _json(org_limits(org), org=org)

    @get("/services/data/{version}/limits/recordCount")
    async def record_count(request: Request) -> Response:
        authorise(request)
        names = request.query_params.get("sObjects")
        wanted = [n.strip() for n in names.split(",") if n.strip()] if names else None
        return _json({"sObjects": org.record_counts(wanted)}, org=org)

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
            user_id="005000000000001AAA",
            username=escape(access.username),
        )
        return Response(body_text, media_type="text/xml;charset=UTF-8")

    return router


__all__ = ["API_VERSION", "Access", "create_app", "org_limits", "rest_router", "soap_router"]
