"""The write routes of an empty org (`orgseed serve --empty`): sObject REST, sObject Collections, Bulk API
2.0 ingest, the Knowledge publish resources and the Metadata API deploy. A served bundle is read-only: these
routes answer it 405, as before.

    POST   .../sobjects/<Obj>                              create (201 {"id", "success", "errors"})
    PATCH  .../sobjects/<Obj>/<id>                         update (204)
    DELETE .../sobjects/<Obj>/<id>                         delete (204)
    PATCH  .../sobjects/<Obj>/<ExtField>/<value>           upsert (201 created / 200 updated)
    POST|PATCH|DELETE .../composite/sobjects[/<Obj>/<ExtField>]   collections of up to 200 records
    .../jobs/ingest[/<id>[/batches|/successfulResults|/failedResults|/unprocessedrecords]]
    PATCH  .../knowledgeManagement/articleVersions/masterVersions/<id>   {"publishStatus": "Online"}
    POST   .../actions/standard/publishKnowledgeArticles
    POST   /services/Soap/m/<version>/deployRequest[/<id>]  Metadata API deploy / checkDeployStatus
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from orgs.local.api import GET, OrgCall, _json_body, authorise, session, writable_org
from orgs.local.bulk import ADMIN_USER_ID
from orgs.local.errors import OrgApiError
from orgs.local.writable.dml import DmlError, SaveResult
from orgs.local.writable.metadata import metadata_routes

COLLECTION_MAX = 200
TOOLING_EMPTY = {
    n.lower(): n for n in ("ValidationRule", "ApexTrigger", "FlowDefinitionView", "WorkflowRule")
}
DUPLICATE_HEADER = "sforce-duplicate-rule-header"


async def _record_body(request: Request) -> dict[str, Any]:
    body = await _json_body(request)
    if not isinstance(body, dict):
        raise OrgApiError(
            "The request body must be a JSON object of field values.", error_code="JSON_PARSER_ERROR"
        )
    return body


def _writable(call: OrgCall) -> Any:
    return writable_org(call.org, "writes (sObject REST, Collections, Knowledge publishing)")


def _allow_save(request: Request) -> bool:
    value = request.headers.get(DUPLICATE_HEADER, "")
    return "allowsave=true" in value.replace(" ", "").lower()


def _bool(request: Request, name: str) -> bool:
    return (request.query_params.get(name) or "false").lower() == "true"


def _single(result: SaveResult, status: int = 400) -> None:
    if not result.success:
        raise DmlError(result.errors[0], status=status)


def write_routes() -> list[BaseRoute]:
    routes: list[BaseRoute] = []
    v = "/services/data/{version}"

    def add(paths: tuple[str, ...], methods: list[str]) -> Any:
        def register(fn: Any) -> Any:
            for p in paths:
                routes.append(Route(p, fn, methods=methods, include_in_schema=False))
            return fn

        return register

    @add((v + "/sobjects/{name}", v + "/sobjects/{name}/"), ["POST"])
    async def create(request: Request) -> Response:
        call = await authorise(request)
        org = _writable(call)
        body = await _record_body(request)
        name = request.path_params["name"]
        result: SaveResult = await call.run(org.create, name, body, _allow_save(request))
        _single(result)
        return call.reply(orjson.dumps(result.as_rest()), 201)

    @add((v + "/sobjects/{name}/{record_id}",), ["PATCH", "DELETE"])
    async def record(request: Request) -> Response:
        call = await authorise(request)
        org = _writable(call)
        name = request.path_params["name"]
        rid = request.path_params["record_id"]
        spec = org.sobject(name)
        if request.method == "DELETE":
            (result,) = await call.run(org.writer.delete, [rid])
            if result.errors and result.errors[0].code in (
                "INVALID_CROSS_REFERENCE_KEY",
                "ENTITY_IS_DELETED",
            ):
                raise OrgApiError("The requested resource does not exist", error_code="NOT_FOUND", status=404)
            _single(result)
            return Response(status_code=204)
        body = await _record_body(request)
        (result,) = await call.run(org.writer.update, spec.name, [{**body, "Id": rid}])
        if (
            result.errors
            and result.errors[0].code == "INVALID_CROSS_REFERENCE_KEY"
            and not result.errors[0].fields
        ):
            raise OrgApiError("The requested resource does not exist", error_code="NOT_FOUND", status=404)
        _single(result)
        return Response(status_code=204)

    @add((v + "/sobjects/{name}/{field}/{value:path}",), ["PATCH", "POST"])
    async def upsert(request: Request) -> Response:
        call = await authorise(request)
        org = _writable(call)
        body = await _record_body(request)
        field = request.path_params["field"]
        value = request.path_params["value"]
        record = {**body, field: value}
        (result,) = await call.run(
            org.writer.upsert, request.path_params["name"], field, [record], allow_save=_allow_save(request)
        )
        if result.errors and result.errors[0].code == "DUPLICATE_EXTERNAL_ID":
            raise OrgApiError(result.errors[0].message, error_code="MULTIPLE_CHOICES", status=300)
        _single(result)
        return call.reply(orjson.dumps(result.as_rest(with_created=True)), 201 if result.created else 200)

    @add((v + "/composite/sobjects", v + "/composite/sobjects/"), ["POST", "PATCH", "DELETE"])
    async def collection(request: Request) -> Response:
        call = await authorise(request)
        org = _writable(call)
        if request.method == "DELETE":
            ids = [i for i in (request.query_params.get("ids") or "").split(",") if i]
            _count(ids)
            results = await call.run(org.writer.delete, ids, all_or_none=_bool(request, "allOrNone"))
            return call.reply(orjson.dumps([r.as_rest() for r in results]))
        body = await _json_body(request)
        records, all_or_none = _collection_body(body)
        if request.method == "PATCH":
            results = await call.run(org.writer.update, None, records, all_or_none=all_or_none)
        else:
            results = await call.run(
                org.writer.insert_mixed, records, all_or_none=all_or_none, allow_save=_allow_save(request)
            )
        return call.reply(orjson.dumps([r.as_rest() for r in results]))

    @add((v + "/composite/sobjects/{name}/{field}",), ["PATCH"])
    async def collection_upsert(request: Request) -> Response:
        call = await authorise(request)
        org = _writable(call)
        records, all_or_none = _collection_body(await _json_body(request))
        results = await call.run(
            org.writer.upsert,
            request.path_params["name"],
            request.path_params["field"],
            records,
            all_or_none=all_or_none,
            allow_save=_allow_save(request),
        )
        return call.reply(orjson.dumps([r.as_rest(with_created=True) for r in results]))

    jobs = v + "/jobs/ingest"

    @add((jobs, jobs + "/"), ["POST", *GET])
    async def ingest_jobs(request: Request) -> Response:
        call = await authorise(request)
        org = _ingest_org(call)
        if request.method == "POST":
            return call.reply(
                orjson.dumps(await call.run(org.ingest.create, await _json_body(request), call.version))
            )
        return call.reply(orjson.dumps(await call.run(org.ingest.all)))

    @add((jobs + "/{job_id}", jobs + "/{job_id}/"), ["PATCH", "DELETE", *GET])
    async def ingest_job(request: Request) -> Response:
        call = await authorise(request)
        org = _ingest_org(call)
        job_id = request.path_params["job_id"]
        if request.method == "PATCH":
            return call.reply(
                orjson.dumps(await call.run(org.ingest.set_state, job_id, await _json_body(request)))
            )
        if request.method == "DELETE":
            await call.run(org.ingest.delete, job_id)
            return Response(status_code=204)
        return call.reply(orjson.dumps(await call.run(org.ingest.info, job_id)))

    @add((jobs + "/{job_id}/batches", jobs + "/{job_id}/batches/"), ["PUT"])
    async def ingest_upload(request: Request) -> Response:
        call = await authorise(request)
        org = _ingest_org(call)
        data = await request.body()
        await call.run(org.ingest.upload, request.path_params["job_id"], data)
        return Response(status_code=201)

    @add((jobs + "/{job_id}/{kind}", jobs + "/{job_id}/{kind}/"), GET)
    async def ingest_results(request: Request) -> Response:
        call = await authorise(request)
        org = _ingest_org(call)
        kinds = {
            "successfulresults": "successfulResults",
            "failedresults": "failedResults",
            "unprocessedrecords": "unprocessedrecords",
        }
        kind = kinds.get(request.path_params["kind"].lower())
        if kind is None:
            raise OrgApiError("The requested resource does not exist", error_code="NOT_FOUND", status=404)
        text = await call.run(org.ingest.results, request.path_params["job_id"], kind)
        return Response(text, media_type="text/csv; charset=UTF-8")

    @add((v + "/knowledgeManagement/articleVersions/masterVersions/{record_id}",), ["PATCH"])
    async def publish_one(request: Request) -> Response:
        call = await authorise(request)
        org = _writable(call)
        body = await _json_body(request)
        if not isinstance(body, dict) or body.get("publishStatus") != "Online":
            raise OrgApiError("Only publishStatus Online is supported here.", error_code="INVALID_INPUT")
        (result,) = await call.run(org.publish_articles, [request.path_params["record_id"]])
        _single(result)
        return Response(status_code=204)

    @add((v + "/actions/standard/publishKnowledgeArticles",), ["POST"])
    async def publish_action(request: Request) -> Response:
        call = await authorise(request)
        org = _writable(call)
        body = await _json_body(request)
        inputs = body.get("inputs") if isinstance(body, dict) else None
        if not isinstance(inputs, list) or not inputs:
            raise OrgApiError("The request needs an inputs list.", error_code="INVALID_INPUT")
        out = []
        for item in inputs:
            ids = item.get("articleVersionIdList") if isinstance(item, dict) else None
            if not isinstance(ids, list):
                raise OrgApiError("Each input needs articleVersionIdList.", error_code="INVALID_INPUT")
            results = await call.run(org.publish_articles, [str(i) for i in ids])
            errors = [e.as_rest() for r in results for e in r.errors]
            out.append(
                {
                    "actionName": "publishKnowledgeArticles",
                    "errors": [
                        {"statusCode": e["statusCode"], "message": e["message"], "fields": []} for e in errors
                    ]
                    or None,
                    "isSuccess": not errors,
                    "outputValues": None,
                }
            )
        return call.reply(orjson.dumps(out))

    async def userinfo(request: Request) -> Response:
        """OpenID Connect userinfo: who the session is (the API user) and which org."""
        state = session(request)
        org = state.org
        user = getattr(org, "api_user_id", ADMIN_USER_ID)
        body = {
            "sub": f"https://login.salesforce.com/id/{org.org_id}/{user}",
            "user_id": user,
            "organization_id": org.org_id,
            "preferred_username": state.access.username,
        }
        return Response(orjson.dumps(body), media_type="application/json")

    routes.append(Route("/services/oauth2/userinfo", userinfo, methods=["GET"], include_in_schema=False))

    @add((v + "/tooling/query", v + "/tooling/query/"), GET)
    async def tooling_query(request: Request) -> Response:
        """The Tooling API's query, for the automation a loader must know about: an embedded org has no
        validation rule, trigger or flow, so those answer empty; other Tooling objects are not served."""
        call = await authorise(request)
        q = request.query_params.get("q") or ""
        m = re.search(r"\bFROM\s+(\w+)", q, re.I)
        entity = m.group(1) if m else ""
        if entity.lower() not in TOOLING_EMPTY:
            raise OrgApiError(
                f"sObject type '{entity}' is not supported by this org's Tooling API (it serves "
                f"{', '.join(sorted(TOOLING_EMPTY.values()))}).",
                error_code="INVALID_TYPE",
            )
        body: dict[str, Any] = {
            "size": 0,
            "totalSize": 0,
            "done": True,
            "queryLocator": None,
            "entityTypeName": TOOLING_EMPTY[entity.lower()],
            "records": [],
        }
        return call.reply(orjson.dumps(body))

    routes.extend(metadata_routes())
    return routes


def _ingest_org(call: OrgCall) -> Any:
    return writable_org(call.org, "Bulk API 2.0 ingest jobs (query jobs are served)")


def _count(items: list[Any]) -> None:
    if len(items) > COLLECTION_MAX:
        raise OrgApiError(
            f"EXCEEDED_ID_LIMIT: record limit reached. cannot submit more than {COLLECTION_MAX} records into this call",
            error_code="EXCEEDED_ID_LIMIT",
        )


def _collection_body(body: Any) -> tuple[list[dict[str, Any]], bool]:
    if not isinstance(body, dict) or not isinstance(body.get("records"), list):
        raise OrgApiError("The request body needs a records list.", error_code="JSON_PARSER_ERROR")
    records = body["records"]
    _count(records)
    if not all(isinstance(r, dict) for r in records):
        raise OrgApiError("Each record must be a JSON object.", error_code="JSON_PARSER_ERROR")
    return records, bool(body.get("allOrNone", False))
