"""The embedded org's query engine behind the slice of simple-salesforce's interface that readers use.

`InProcessClient(org)` answers `query`, `query_more`, `query_all` and `search` by calling `LocalOrg`
directly: no server, no socket, no TLS, no HTTP parsing. It is what the build's answer check
(`validators/tasks_soql.py` through `orgs/crmarena_tools.Connector`) talks to, since at scale most of that
check's time went to HTTP; a deterministic sample of the instances still goes over HTTP (flows/build.py),
and the tests compare the two on whole bundles.

What the client returns is what a simple-salesforce client decodes from the served org's answer: values,
types and key order are the ones an HTTP client sees. A result made only of JSON's own types (dicts with
str keys, lists, str, bool, None, 64-bit ints, finite floats: what the engine builds from SQLite's values)
is returned as it is, since the JSON encoder the server uses (`orjson`) and back would give an equal copy
of it; anything else (a tuple, an infinite float, a date, ...) goes through `orjson` and back. The round
trip was ~1.2 s of the build's scale-10 answer check. A refused query raises `InProcessError`, which carries the
org's error JSON in `content` and the HTTP status in `status`, as simple-salesforce's
`SalesforceError` does.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson

from orgs.local.engine import API_VERSION, LocalOrg
from orgs.local.errors import OrgApiError


class InProcessError(Exception):
    """A query the org refused: `content` is the error JSON the org would have answered, `status` its
    HTTP status."""

    def __init__(self, exc: OrgApiError, query: str) -> None:
        super().__init__(f"{exc.error_code}: {exc.message} (query: {query[:200]})")
        self.content: list[dict[str, Any]] = exc.to_json()
        self.status = exc.status


_SCALARS = (str, bool, type(None))
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # orjson encodes ints in this range, refuses the others
_FLOAT_MAX = sys.float_info.max


def _json_native(value: Any) -> bool:
    """Whether `value` is made only of JSON's own types, such that `orjson.loads(orjson.dumps(value))`
    equals it with the same types and key order: dicts (exactly dict) with str keys, lists, str, bool, None,
    ints orjson encodes and finite floats (NaN and infinities would come back as null)."""
    t = type(value)
    if t is dict:
        for k, v in value.items():
            tv = type(v)
            if type(k) is not str:
                return False
            if tv is str or v is None or tv is bool:
                continue
            if tv is int:
                if not _INT_MIN <= v <= _INT_MAX:
                    return False
            elif tv is float:
                if not -_FLOAT_MAX <= v <= _FLOAT_MAX:  # False for NaN and the infinities
                    return False
            elif not _json_native(v):
                return False
        return True
    if t is list:
        return all(_json_native(v) for v in value)
    if t in _SCALARS:
        return True
    if t is int:
        return bool(_INT_MIN <= value <= _INT_MAX)
    if t is float:
        return bool(-_FLOAT_MAX <= value <= _FLOAT_MAX)
    return False


def _decoded(value: Any) -> Any:
    """`value` as an HTTP client decodes it: itself when JSON-native (`_json_native`), else through orjson."""
    if _json_native(value):
        return value
    return orjson.loads(orjson.dumps(value))


class InProcessClient:
    """`query`/`query_more`/`query_all`/`search` of simple-salesforce, answered by `org` in this process."""

    def __init__(self, org: LocalOrg, version: str = API_VERSION) -> None:
        self.org = org
        self.version = version

    def query(self, query: str, include_deleted: bool = False) -> dict[str, Any]:
        try:
            return dict(_decoded(self.org.query(query, self.version, include_deleted=include_deleted)))
        except OrgApiError as exc:
            raise InProcessError(exc, query) from exc

    def query_more(self, next_records_identifier: str, identifier_is_url: bool = False) -> dict[str, Any]:
        """The next page; `next_records_identifier` is `nextRecordsUrl` (or the locator alone)."""
        locator = next_records_identifier.rstrip("/").rsplit("/", 1)[-1]
        try:
            return dict(_decoded(self.org.query_more(locator, self.version)))
        except OrgApiError as exc:
            raise InProcessError(exc, next_records_identifier) from exc

    def query_all(self, query: str, include_deleted: bool = False) -> dict[str, Any]:
        """Every page of `query` in one result, as simple-salesforce's `query_all` returns it."""
        result = self.query(query, include_deleted=include_deleted)
        records = list(result["records"])
        while not result["done"]:
            result = self.query_more(result["nextRecordsUrl"], identifier_is_url=True)
            records += result["records"]
        return {**result, "records": records, "totalSize": len(records)}

    def bare_records(self, query: str) -> list[dict[str, Any]]:
        """`query_all(query)["records"]`, each record less its top-level `attributes` (nested parent
        records keep theirs), as an HTTP client would decode them: for readers that drop `attributes`
        anyway (`orgs.crmarena_tools.Connector`). No pages and no cursor: the rows are shaped once, and
        the JSON round trip is skipped when the rows hold only JSON's own types (`LocalOrg.bare_records`)."""
        try:
            records, native = self.org.bare_records(query, self.version)
        except OrgApiError as exc:
            raise InProcessError(exc, query) from exc
        return records if native else list(_decoded(records))

    def search(self, search: str) -> dict[str, Any] | None:
        try:
            found = dict(_decoded(self.org.search(search, self.version)))
        except OrgApiError as exc:
            raise InProcessError(exc, search) from exc
        return found or None  # simple-salesforce answers None for an empty JSON object
