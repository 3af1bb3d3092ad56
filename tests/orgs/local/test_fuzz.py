"""Fuzzing the served org: no input gets a 5xx, and no connection is dropped (issue 10 item 4).

Hypothesis draws batches of requests: the golden corpus's SOQL and SOSL (tests/fixtures/soql/golden.jsonl)
mutated token by token (tokens deleted, repeated, swapped, replaced by or joined with hostile ones: huge
numbers, far dates, bad offsets, non-ASCII names, NULs, deep nesting, long chains), generated text, and
hostile Bulk API 2.0 job bodies, result parameters, SOAP logins, record paths and headers. Every request
goes to the app in-process (ASGI, the whole middleware and routing stack); every tenth also goes over one
kept-alive HTTPS connection to the real server. Each answer must be a 2xx with a body of the right kind or
a 4xx in Salesforce's error shape, and the connection must still be the same one afterwards (unless the
answer said `Connection: close`).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import ssl
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlencode

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orgs.local.api import Access, create_app
from orgs.local.serve import LocalServer
from tests.orgs.local.conftest import FIXTURES, fill
from tests.orgs.local.oracle import Frames

BATCH = 20
BATCHES = 105  # 2,100 requests
SOCKET_EVERY = 10
TOKEN = "fuzz-token"
V = "/services/data/v59.0"

HOSTILE = [
    *"(),.:'\"\\{}*?%_",
    "((((((((((((((((((((",
    "NOT",
    "NOT NOT NOT NOT",
    "OR",
    "AND",
    "AND NOT",
    "''",
    "\\'",
    "\x00",
    "\t",
    "\n",
    "\r\n",
    "Ｉｄ",
    "Cаse",
    "Idа",
    "²",
    "٣",
    "é",
    "😀",
    "ß",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "99999999999999999999",
    "1" + "0" * 400,
    "0.0000001",
    "1.5",
    "-0",
    "LAST_N_DAYS:99999999999999999999",
    "LAST_N_DAYS:99999999",
    "NEXT_N_YEARS:100000000",
    "N_DAYS_AGO:-1",
    "N_FISCAL_YEARS_AGO:3000000",
    "THIS_FISCAL_QUARTER",
    "TODAY",
    "2020-01-01T00:00:00+99:99",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "0999-01-01T00:00:00Z",
    "2020-02-30",
    "2020-01-01T25:61:61Z",
    "2024-01-05",
    "2024-01-05T10:00:00.123456789Z",
    "LIMIT",
    "LIMIT 0",
    "OFFSET 2001",
    "OFFSET 5",
    "FIELDS(ALL)",
    "FIELDS(CUSTOM)",
    "GROUP BY Id",
    "HAVING COUNT(Id) > 1",
    "ORDER BY Id DESC NULLS LAST",
    "COUNT()",
    "COUNT(Id)",
    "COUNT_DISTINCT(Subject)",
    "SUM(Subject)",
    ":x",
    "TYPEOF",
    "(SELECT Id FROM Cases)",
    "(SELECT Id FROM Case)",
    "IN ()",
    "IN (null)",
    "= null",
    "!= null",
    "INCLUDES ('a')",
    "LIKE '%a\\%'",
    "'" + "x" * 4001 + "'",
    "convertTimezone(",
    "DAY_ONLY(CreatedDate)",
    "CALENDAR_YEAR(CreatedDate)",
    "WITH SECURITY_ENFORCED",
    "USING SCOPE mine",
    "FOR UPDATE",
    "ALL ROWS",
    "UPDATE TRACKING",
    "RETURNING",
    "IN ALL FIELDS",
    "IN SIDEBAR FIELDS",
    "FIND",
    "SELECT",
    "FROM",
    "WHERE",
    "a*",
    "*a",
    "sm?th",
    '"refund policy"',
    "Account.Owner.Manager.Account.Owner.Name",
    "OrderItemId__r.Order.Account.Owner.Name",
    "Id IN (SELECT Id FROM Case WHERE Id IN (SELECT Id FROM Case))",
]
# literals that keep a query well formed where a literal was, and push its values to their limits
LITERALS = [
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "99999999999999999999999",
    "1" + "0" * 330,
    "0.000000000000000000001",
    "2020-01-01T00:00:00+99:99",
    "2020-01-01T00:00:00+23:59",
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+00:01",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59-00:01",
    "0999-06-01",
    "9999-12-31",
    "LAST_N_DAYS:99999999",
    "NEXT_N_DAYS:999999999999",
    "N_YEARS_AGO:9999",
    "NEXT_N_FISCAL_QUARTERS:2147483647",
    "'" + "é" * 4000 + "'",
    "'" + "x" * 4001 + "'",
    "'\\'\\\\\\%\\_\\n'",
    "'Ｉｄ'",
    "'\x00'",
    "null",
    "true",
]
_TOKEN = re.compile(r"'(?:[^'\\]|\\.)*'|\{[^}]*\}|\w+|\s+|.", re.DOTALL)
_LITERAL = re.compile(r"'.*'|[0-9][0-9.:T+Z-]*|(?:LAST|NEXT|THIS)_\w+", re.DOTALL | re.IGNORECASE)
_CLAUSE_END = re.compile(r"\s(?:ORDER\s+BY|GROUP\s+BY|LIMIT|OFFSET|FOR|WITH)\s|\)\s*(?:,|$)|$", re.IGNORECASE)


def tokens_of(text: str) -> list[str]:
    return _TOKEN.findall(text)


# -- requests -------------------------------------------------------------------------------------------------


@dataclass
class Req:
    method: str
    path: str
    query: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""

    def described(self) -> str:
        return f"{self.method} {self.path}?{self.query[:300]!r} body={self.body[:300]!r}"


hostile_token = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(max_size=8),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
)
index = st.integers(min_value=0, max_value=10_000)
mutation = st.one_of(
    st.tuples(st.just("delete"), index),
    st.tuples(st.just("repeat"), index, st.integers(min_value=2, max_value=300)),
    st.tuples(st.just("swap"), index, index),
    st.tuples(st.just("insert"), index, hostile_token),
    st.tuples(st.just("replace"), index, hostile_token),
    st.tuples(st.just("truncate"), index),
    st.tuples(
        st.just("nest"), index, st.integers(min_value=1, max_value=300), st.sampled_from(["(", "NOT "])
    ),
    st.tuples(st.just("literal"), index, st.sampled_from(LITERALS)),
    st.tuples(st.just("literal"), index, st.sampled_from(LITERALS)),
    st.tuples(st.just("wrap"), st.integers(min_value=1, max_value=120), st.sampled_from(["(", "NOT "])),
    st.tuples(st.just("chain"), st.integers(min_value=2, max_value=120)),
)


def where_clause(text: str) -> tuple[int, int] | None:
    """Where the (first) WHERE condition starts and ends, roughly."""
    m = re.search(r"\sWHERE\s", text, re.IGNORECASE)
    if m is None:
        return None
    end = _CLAUSE_END.search(text, m.end())
    return m.end(), end.start() if end else len(text)


def reshape(text: str, kind: str, k: int, opener: str = "(") -> str:
    """The WHERE condition nested `k` deep, or ORed with itself `k` times: still well formed."""
    span = where_clause(text)
    if span is None:
        return text
    start, end = span
    cond = text[start:end]
    if kind == "wrap":
        new = opener * k + cond + (")" * k if opener == "(" else "")
    else:
        new = " OR ".join([f"({cond})"] * k)
    return text[:start] + new + text[end:]


def mutate(text: str, mutations: list[tuple[Any, ...]]) -> str:
    toks = tokens_of(text) or [""]
    for m in mutations:
        if m[0] in ("wrap", "chain"):
            toks = tokens_of(reshape("".join(toks), *m)) or [""]
            continue
        if m[0] == "literal":
            places = [i for i, t in enumerate(toks) if _LITERAL.fullmatch(t)]
            if places:
                toks[places[m[1] % len(places)]] = m[2]
            continue
        kind, at = m[0], m[1] % len(toks)
        if kind == "delete" and len(toks) > 1:
            del toks[at]
        elif kind == "repeat":
            toks[at:at] = [" OR " if toks[at].strip() else ""] + [toks[at]] * m[2]
        elif kind == "swap":
            other = m[2] % len(toks)
            toks[at], toks[other] = toks[other], toks[at]
        elif kind == "insert":
            toks[at:at] = [" ", m[2], " "]
        elif kind == "replace":
            toks[at] = m[2]
        elif kind == "truncate":
            toks = toks[: at + 1]
        elif kind == "nest":
            toks[at:at] = [m[3] * m[2]]
    return "".join(toks)


def api(path: str, params: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> Req:
    head = [(b"authorization", f"Bearer {TOKEN}".encode())]
    head += [(k.lower().encode(), v.encode("utf-8", "surrogatepass")) for k, v in (headers or {}).items()]
    return Req("GET", V + path, urlencode(params or {}).encode(), head)


def strategies(corpus: list[str]) -> st.SearchStrategy[Req]:
    queries = [q for q in corpus if not q.lstrip().upper().startswith("FIND")]
    searches = [q for q in corpus if q.lstrip().upper().startswith("FIND")]
    mutated_query = st.builds(mutate, st.sampled_from(queries), st.lists(mutation, max_size=4))
    mutated_search = st.builds(mutate, st.sampled_from(searches), st.lists(mutation, max_size=4))
    any_text = st.text(max_size=200)
    soql = st.one_of(
        mutated_query,
        mutated_query,
        mutated_query,
        any_text,
        any_text.map(lambda s: "SELECT " + s),
        any_text.map(lambda s: "SELECT Id FROM Case WHERE " + s),
    )
    sosl = st.one_of(mutated_search, mutated_search, any_text.map(lambda s: "FIND {" + s + "}"))
    json_value = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
        max_leaves=8,
    )
    job_body = st.one_of(
        st.builds(lambda q: {"operation": "query", "query": q}, soql),
        st.fixed_dictionaries(
            {},
            optional={
                "operation": st.one_of(st.sampled_from(["query", "queryAll", "insert"]), json_value),
                "query": st.one_of(soql, json_value),
                "columnDelimiter": st.one_of(st.sampled_from(["COMMA", "PIPE", "SPACE"]), json_value),
                "lineEnding": st.one_of(st.sampled_from(["LF", "CRLF", "CR"]), json_value),
                "contentType": json_value,
            },
        ),
        json_value,
    )

    def job(body: Any, raw: bytes | None) -> Req:
        data = raw if raw is not None else json.dumps(body).encode()
        req = api("/jobs/query")
        req.method, req.body = "POST", data
        req.headers.append((b"content-type", b"application/json"))
        return req

    def soap(user: str, password: str, garble: bool) -> Req:
        body = (
            '<?xml version="1.0" encoding="utf-8"?><env:Envelope xmlns:env="http://schemas.xmlsoap.org/soap/'
            f'envelope/"><env:Body><n1:login xmlns:n1="urn:partner.soap.sforce.com"><n1:username>{user}'
            f"</n1:username><n1:password>{password}</n1:password></n1:login></env:Body></env:Envelope>"
        )
        data = body.encode("utf-8", "surrogatepass")
        return Req(
            "POST",
            "/services/Soap/u/59.0",
            b"",
            [(b"content-type", b"text/xml")],
            data[:-40] if garble else data,
        )

    segment = st.text(min_size=1, max_size=30).map(lambda s: quote(s, safe=""))
    # what a client can put in a header (no control characters: HTTP clients refuse to send them)
    header_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30)
    return st.one_of(
        soql.map(lambda q: api("/query/", {"q": q})),
        soql.map(lambda q: api("/query/", {"q": q})),
        soql.map(lambda q: api("/queryAll/", {"q": q}, {"Sforce-Query-Options": "batchSize=200"})),
        sosl.map(lambda q: api("/search/", {"q": q})),
        st.builds(lambda q, h: api("/query/", {"q": q}, {"Sforce-Query-Options": h}), soql, header_text),
        st.builds(job, job_body, st.one_of(st.none(), st.binary(max_size=60))),
        st.builds(
            lambda j, m, loc: api(f"/jobs/query/{j}/results", {"maxRecords": m, "locator": loc}),
            segment,
            st.text(max_size=12),
            st.text(max_size=12),
        ),
        st.builds(lambda loc: api(f"/query/{loc}"), segment),
        st.builds(lambda o, i: api(f"/sobjects/{o}/{i}"), segment, segment),
        st.builds(lambda o, f: api(f"/sobjects/Case/{o}", {"fields": f}), segment, st.text(max_size=40)),
        st.builds(lambda o, f, v: api(f"/sobjects/{o}/{f}/{v}"), segment, segment, segment),
        st.builds(lambda p: api(f"/{p}"), segment),
        st.builds(soap, st.text(max_size=30), st.text(max_size=30), st.booleans()),
    )


# -- running them ---------------------------------------------------------------------------------------------


def check(status: int, headers: dict[str, str], body: bytes, req: Req) -> None:
    what = req.described()
    assert status < 500, f"{status} for {what}: {body[:500]!r}"
    kind = headers.get("content-type", "")
    if status >= 400:
        if kind.startswith("text/xml"):
            assert b"<sf:exceptionCode>" in body, what
        else:
            content = json.loads(body)
            assert isinstance(content, list) and set(content[0]) == {"message", "errorCode"}, what
    elif kind.startswith("application/json") and req.method != "HEAD" and body:
        json.loads(body)


async def call(app: Any, req: Req) -> tuple[int, dict[str, str], bytes]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": req.method,
        "scheme": "https",
        "path": unquote(req.path),  # as uvicorn gives it: decoded (raw_path keeps the %-escapes)
        "raw_path": req.path.encode(),
        "query_string": req.query,
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"content-length", str(len(req.body)).encode()), *req.headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 443),
    }
    sent = False
    out: dict[str, Any] = {"body": b""}

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": req.body, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            out["status"] = message["status"]
            out["headers"] = {k.decode().lower(): v.decode("latin-1") for k, v in message["headers"]}
        else:
            out["body"] += message.get("body", b"")

    await app(scope, receive, send)
    assert "status" in out, f"no answer to {req.described()}"
    return out["status"], out["headers"], out["body"]


class Socket:
    """The sample's kept-alive HTTPS connection to the real server."""

    def __init__(self, server: LocalServer) -> None:
        assert server.cert_path is not None
        self.server = server
        self.context = ssl.create_default_context(cafile=str(server.cert_path))
        self.conn = self.open()
        self.requests = 0
        self.reopened = 0

    def open(self) -> http.client.HTTPSConnection:
        conn = http.client.HTTPSConnection("127.0.0.1", self.server.port, context=self.context, timeout=60)
        conn.connect()
        return conn

    def send(self, req: Req) -> tuple[int, dict[str, str], bytes]:
        sock = self.conn.sock
        headers = {k.decode(): v.decode("latin-1") for k, v in req.headers}
        if "authorization" in headers:
            headers["authorization"] = f"Bearer {self.server.token}"
        path = req.path + ("?" + req.query.decode() if req.query else "")
        self.conn.request(req.method, path, body=req.body or None, headers=headers)
        r = self.conn.getresponse()
        body = r.read()
        got = {k.lower(): v for k, v in r.getheaders()}
        self.requests += 1
        if got.get("connection", "").lower() == "close":
            self.conn.close()
            self.conn = self.open()
            self.reopened += 1
        else:
            assert self.conn.sock is sock, f"the connection was dropped after {req.described()}"
        return r.status, got, body


def test_no_input_gets_a_5xx(server: LocalServer, frames: Frames) -> None:
    corpus = [
        fill(json.loads(line)["q"], frames)
        for line in (FIXTURES / "golden.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    app = create_app(server.org, Access(TOKEN))
    sock = Socket(server)
    seen = {"inputs": 0}
    with asyncio.Runner() as runner:

        @settings(
            max_examples=BATCHES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(st.lists(strategies(corpus), min_size=BATCH, max_size=BATCH))
        def batch(requests: list[Req]) -> None:
            for req in requests:
                check(*runner.run(call(app, req)), req)
                seen["inputs"] += 1
                if seen["inputs"] % SOCKET_EVERY == 0:
                    check(*sock.send(req), req)

        try:
            batch()
        finally:
            app.state.org.close()
            sock.conn.close()
    assert seen["inputs"] >= 2000
    assert sock.requests >= 200 and sock.reopened < sock.requests
