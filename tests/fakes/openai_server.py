"""A real OpenAI-compatible HTTP server on loopback, for tests and benchmarks (no network, no key).

`POST /v1/chat/completions` answers with deterministic, schema-valid content built from the request: it
reads the machine-readable FACTS block orgseed puts in every prompt (task, facts and the rules the content
checks verify) and writes text that satisfies those rules, with per-request filler words seeded by the
request, so texts are not near-duplicates. Knobs inject faults: latency, 429 with or without Retry-After,
500, hangs (client timeouts), invalid JSON, truncated output (`finish_reason: length`), refusals, content
that fails the checks, near-duplicate texts, and endpoints without json_schema / json_object support. It
counts requests (by status, by task, by response format) and returns `usage` token counts.

`faults` adds what gateways and overloaded servers send (`TRANSPORT_FAULTS`): 5xx HTML pages, connections
closed mid-answer, and 200s whose body is not a chat completion (cut JSON, an HTML page, an `{"error": ...}`
envelope, no choices), plus slow answers. `max_faults_per_request` caps the transport faults one request
(the same body) meets, so a test with many faults cannot fail by an unlucky run of them.

Run it alone: `python -m tests.fakes.openai_server --port 8765 --latency 0.2`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

import uvicorn

from generator.text.render import parse_facts_block
from schemas.textrules import indefinite

_WORDS_TEXT = (
    "amber breeze canyon dune ember fern glacier harbor island juniper kettle lantern meadow nectar orchard "
    "pebble quartz river saddle timber umber valley willow yarrow zephyr acorn birch cedar delta estuary "
    "falcon garnet heron indigo jasper kelp lagoon maple nutmeg opal prairie quill reed sage thistle tundra "
    "upland vista wharf yucca zinnia alpine basil cobalt drift echo flint grove hollow ivory jade knoll "
    "lichen marble north ochre pine quarry ridge slate tide umbra vale wren xenon yonder zenith arch bramble "
    "clover dawn evening frost gust hazel inlet jetty krill larch moss nook oak pasture quiet rain stone "
    "trail union vine wool yard zest anchor beacon cliff dell eddy field gale hill isle lake mist"
)
WORDS = _WORDS_TEXT.split()
# What `FakeConfig.faults` can inject, besides the legacy rate knobs:
TRANSPORT_FAULTS = (
    "429",  # Retry-After as the `retry_after` knob says (no header when it is None)
    "429-bare",  # never a Retry-After header
    "500",  # a JSON error body
    "500-html",  # HTML error pages, as proxies and gateways send them
    "502-html",
    "503-html",
    "hang",  # no answer for `hang_seconds` (a client timeout)
    "slow",  # the answer after `slow_seconds` (within the timeout)
    "close",  # headers and half a body, then the connection is closed
    "cut",  # 200 with a JSON body cut in half (a consistent Content-Length)
    "html-200",  # 200 with an HTML page (a captive portal or a gateway's login page)
    "error-200",  # 200 with an `{"error": ...}` envelope
    "empty-choices",  # 200 with a completion whose `choices` is empty
)
_HTML_TITLES = {
    500: "500 Internal Server Error",
    502: "502 Bad Gateway",
    503: "503 Service Temporarily Unavailable",
    200: "Sign in to continue",
}


@dataclass(frozen=True)
class Raw:
    """A response body sent as given; `complete=False` declares twice its length and closes mid-body."""

    body: bytes
    content_type: str = "application/json"
    complete: bool = True


def html_page(status: int) -> Raw:
    title = _HTML_TITLES[status]
    page = (
        f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n"
        f"<body><center><h1>{title}</h1></center><hr><center>nginx</center></body></html>\n"
    )
    return Raw(page.encode(), "text/html; charset=utf-8")


@dataclass
class FakeConfig:
    latency: float = 0.0  # seconds before every answer
    rate_limit_rate: float = 0.0  # share of requests answered 429
    retry_after: float | None = None  # Retry-After seconds on 429s (None: no header)
    retry_after_ms: bool = False  # send `retry-after-ms` instead of `retry-after`
    server_error_rate: float = 0.0  # share answered 500
    hang_rate: float = 0.0  # share that hang for `hang_seconds` (client timeouts)
    hang_seconds: float = 5.0
    invalid_json_rate: float = 0.0  # share of answers that are not JSON (decided by the request's hash)
    truncate_rate: float = 0.0  # share cut in half with finish_reason "length"
    refusal_rate: float = 0.0  # share refused (message.refusal)
    wrong_content_rate: float = 0.0  # share that are schema-valid but fail the content checks
    zero_price_rate: float = 0.0  # share whose texts state a "$0.00" purchase (a template fed no price)
    faults_on_repairs: bool = False  # content faults also hit follow-up turns (else repairs come out right)
    duplicate_texts: bool = False  # the same filler for every request unless a variation hint is present
    json_schema_supported: bool = True
    json_object_supported: bool = True
    script: list[str] = field(default_factory=list)  # faults for the first requests, in arrival order:
    # "429", "500" or "hang" each; after the script runs out the rates above apply
    require_key: str | None = None  # 401 unless `Authorization: Bearer <key>`; the message echoes the key
    seed: int = 0
    faults: dict[str, float] = field(default_factory=dict)  # TRANSPORT_FAULTS name -> share of requests
    max_faults_per_request: int | None = None  # then the same request body is answered (None: no cap)
    slow_seconds: float = 0.3  # the delay of a "slow" answer (which then comes whole)
    schema_invalid_rate: float = 0.0  # share of answers that are JSON but break the output schema
    # answers every request that gets past the faults with `agent(request) -> chat.completion body` instead of
    # writing texts (tests/fakes/agent_script.py scripts agents this way)
    agent: Any = None


@dataclass
class FakeStats:
    requests: int = 0  # POSTs to /chat/completions
    status: Counter[int] = field(default_factory=Counter)
    tasks: Counter[str] = field(default_factory=Counter)  # 200 answers by task
    formats: Counter[str] = field(default_factory=Counter)  # response_format types seen
    keys_seen: set[str] = field(default_factory=set)
    max_tokens: list[int] = field(default_factory=list)  # per request, in arrival order
    # per request, in arrival order: (time.monotonic() on arrival, prompt characters, max_tokens asked for)
    arrivals: list[tuple[float, int, int]] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)  # transport faults injected, by name
    max_in_flight: int = 0
    in_flight: int = 0
    first_at: float | None = None
    last_at: float | None = None


def _h(*parts: Any) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()[:8], "big")


class FakeOpenAI:
    def __init__(self, config: FakeConfig | None = None, host: str = "127.0.0.1", port: int = 0) -> None:
        self.config = config or FakeConfig()
        self.stats = FakeStats()
        self.host = host
        self.port = port
        self._lock = threading.Lock()
        self._rng = random.Random(self.config.seed)
        self._faulted: Counter[str] = Counter()  # transport faults met, by request body digest
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> FakeOpenAI:
        # IPPROTO_TCP explicitly: asyncio turns on TCP_NODELAY only for sockets that say they are TCP; without
        # it every response (headers, then body) waits ~40 ms for a delayed ACK.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            log_level="critical",  # a "close" fault makes uvicorn log an error on purpose
            access_log=False,
            lifespan="off",
            interface="asgi3",
            timeout_graceful_shutdown=1,
            backlog=4096,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="fake-openai", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake OpenAI server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def reset(self, **config: Any) -> None:
        """New knobs (defaults for those not given) and zeroed counters."""
        known = {f.name for f in fields(FakeConfig)}
        bad = set(config) - known
        if bad:
            raise TypeError(f"unknown fake-server knob(s): {sorted(bad)}")
        with self._lock:
            self.config = FakeConfig(**config)
            unknown = set(self.config.faults) - set(TRANSPORT_FAULTS)
            if unknown:
                raise TypeError(f"unknown fault(s): {sorted(unknown)}; known: {TRANSPORT_FAULTS}")
            self.stats = FakeStats()
            self._rng = random.Random(self.config.seed)
            self._faulted = Counter()

    # -- ASGI --------------------------------------------------------------------------------------------

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        status, extra, payload = await self.handle(scope["method"], scope["path"], headers, body)
        out = payload if isinstance(payload, Raw) else Raw(json.dumps(payload).encode())
        length = len(out.body) if out.complete else 2 * len(out.body) + 1
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", out.content_type.encode()),
                    (b"content-length", str(length).encode()),
                    *[(k.encode(), v.encode()) for k, v in extra],
                ],
            }
        )
        # An incomplete body ends the app early: the server then closes the connection mid-answer.
        await send({"type": "http.response.body", "body": out.body, "more_body": not out.complete})

    async def handle(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], Any]:
        if method == "GET" and path.endswith("/models"):
            return 200, [], {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
        if method != "POST" or not path.endswith("/chat/completions"):
            return 404, [], _error(f"No route {method} {path}", "not_found")
        cfg = self.config
        with self._lock:
            st = self.stats
            st.requests += 1
            now = time.monotonic()
            st.first_at = st.first_at if st.first_at is not None else now
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
            auth = headers.get("authorization", "")
            if auth.startswith("Bearer "):
                st.keys_seen.add(auth[len("Bearer ") :])
            roll = self._rng.random()
            forced = cfg.script.pop(0) if cfg.script else None
            if forced is None and cfg.faults:
                forced = self._transport_fault(cfg, body)
        status = 499  # recorded when the client goes away first
        try:
            status, extra, payload = await self._answer(st, cfg, auth, body, roll, forced)
        finally:
            # `st`, not `self.stats`: a request still in flight across a reset (a hang outliving its test)
            # must count in its own test's stats, not drive the next test's `in_flight` below zero.
            with self._lock:
                st.in_flight -= 1
                st.status[status] += 1
                st.last_at = time.monotonic()
        return status, extra, payload

    def _transport_fault(self, cfg: FakeConfig, body: bytes) -> str | None:
        """A fault drawn from `cfg.faults` (called under the lock), unless this body has met its share."""
        digest = hashlib.sha256(body).hexdigest()
        if cfg.max_faults_per_request is not None and self._faulted[digest] >= cfg.max_faults_per_request:
            return None
        u = self._rng.random()
        for name in TRANSPORT_FAULTS:
            u -= cfg.faults.get(name, 0.0)
            if u < 0:
                if name != "slow":  # a slow answer is still an answer
                    self._faulted[digest] += 1
                self.stats.faults[name] += 1
                return name
        return None

    async def _answer(
        self, st: FakeStats, cfg: FakeConfig, auth: str, body: bytes, roll: float, forced: str | None = None
    ) -> tuple[int, list[tuple[str, str]], Any]:
        if cfg.latency:
            await asyncio.sleep(cfg.latency)
        if forced == "slow":
            await asyncio.sleep(cfg.slow_seconds)
            forced = None
        if cfg.require_key is not None and auth != f"Bearer {cfg.require_key}":
            shown = auth[len("Bearer ") :] if auth.startswith("Bearer ") else "(none)"
            return 401, [], _error(f"Incorrect API key provided: {shown}.", "invalid_api_key")
        req = json.loads(body)
        fmt = (req.get("response_format") or {}).get("type", "text")
        with self._lock:
            st.formats[fmt] += 1
            limit = int(req.get("max_tokens") or req.get("max_completion_tokens") or 0)
            st.max_tokens.append(limit)
            chars = sum(len(str(m.get("content") or "")) for m in req.get("messages") or [])
            st.arrivals.append((time.monotonic(), chars, limit))
        # Faults that do not depend on the content: scripted, else by the roll.
        fault = forced
        if fault is None:
            if roll < cfg.rate_limit_rate:
                fault = "429"
            elif roll < cfg.rate_limit_rate + cfg.server_error_rate:
                fault = "500"
            elif roll < cfg.rate_limit_rate + cfg.server_error_rate + cfg.hang_rate:
                fault = "hang"
        if fault == "429":
            extra: list[tuple[str, str]] = []
            if cfg.retry_after is not None:
                if cfg.retry_after_ms:
                    extra.append(("retry-after-ms", str(int(cfg.retry_after * 1000))))
                else:
                    extra.append(("retry-after", f"{cfg.retry_after:g}"))
            return 429, extra, _error("Rate limit reached for requests.", "rate_limit_exceeded")
        if fault == "429-bare":
            return 429, [], _error("Rate limit reached for requests.", "rate_limit_exceeded")
        if fault == "500":
            return 500, [], _error("The server had an error while processing your request.", "server_error")
        if fault is not None and fault.endswith("-html") and fault[:3].isdigit():
            return int(fault[:3]), [], html_page(int(fault[:3]))
        if fault == "hang":
            await asyncio.sleep(cfg.hang_seconds)
            return 500, [], _error("Hung request.", "server_error")
        if fault == "html-200":
            return 200, [], html_page(200)
        if fault == "error-200":  # echoing the caller's key, as a careless gateway might
            shown = auth[len("Bearer ") :] if auth.startswith("Bearer ") else "(none)"
            message = f"The server is overloaded, please try again later (key {shown})."
            return 200, [], _error(message, "server_error")
        if fmt == "json_schema" and not cfg.json_schema_supported:
            return (
                400,
                [],
                _error(
                    "response_format type 'json_schema' is not supported by this server.",
                    "invalid_request_error",
                ),
            )
        if fmt == "json_object" and not cfg.json_object_supported:
            return (
                400,
                [],
                _error(
                    "response_format type 'json_object' is not supported by this server.",
                    "invalid_request_error",
                ),
            )
        if cfg.agent is not None:
            return 200, [], cfg.agent(req)
        messages = req["messages"]
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        block = parse_facts_block(first_user)
        task = str(block["task"])
        variation = "Variation " in first_user
        h = _h(json.dumps(messages, sort_keys=True), req.get("seed"), cfg.seed)
        filler_seed = (
            _h(task, req.get("seed"), first_user)
            if not cfg.duplicate_texts or variation
            else _h(task, "same")
        )
        result = build_result(task, block["facts"], block["rules"], random.Random(filler_seed))
        text = json.dumps(result)
        content: str | None = text
        refusal = None
        finish = "stop"
        repair = any(m["role"] == "assistant" for m in messages)
        u = (h % 10_000) / 10_000 if cfg.faults_on_repairs or not repair else 1.0
        edge = cfg.invalid_json_rate
        if u < edge:
            content = "Sure! Here is the text you asked for: {" + text[1:40]
        elif u < (edge := edge + cfg.truncate_rate):
            content = text[: len(text) // 2]
            finish = "length"
        elif u < (edge := edge + cfg.refusal_rate):
            content, refusal = None, "I'm sorry, I can't help with that."
        elif u < (edge := edge + cfg.wrong_content_rate):
            content = json.dumps(_wrong(result))
        elif u < (edge := edge + cfg.schema_invalid_rate):
            content = json.dumps({"answer": result})  # valid JSON, not the requested shape
        elif u < edge + cfg.zero_price_rate:
            content = json.dumps(_zero_priced(result))
        elif fmt == "text":
            content = f"Here is the JSON:\n```json\n{text}\n```"
        with self._lock:
            st.tasks[task] += 1
        prompt_tokens = sum(len(str(m.get("content") or "")) for m in messages) // 4 + 1
        completion_tokens = len(content or refusal or "") // 4 + 1
        completion = {
            "id": f"chatcmpl-fake-{h:x}",
            "object": "chat.completion",
            "created": 0,
            "model": req.get("model", "fake-model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "finish_reason": finish,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        if fault == "empty-choices":
            return 200, [], {**completion, "choices": []}
        if fault in ("cut", "close"):
            raw = json.dumps(completion).encode()
            return 200, [], Raw(raw[: len(raw) // 2], complete=fault == "cut")
        return 200, [], completion


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": code, "param": None, "code": code}}


def _wrong(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _wrong(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wrong(v) for v in value]
    return "lorem ipsum dolor sit amet"


def _zero_priced(value: Any) -> Any:
    """`value` with every text saying the purchase cost $0.00 (otherwise it still passes the old checks)."""
    if isinstance(value, dict):
        return {k: _zero_priced(v) if k != "name" else v for k, v in value.items()}
    if isinstance(value, list):
        return [_zero_priced(v) for v in value]
    if isinstance(value, str) and value.strip():
        return f"{value} It cost $0.00 at the time."
    return value


# -- content -----------------------------------------------------------------------------------------------


def prose(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return "Notes: " + " ".join(words) + "."


def build_result(
    task: str, facts: dict[str, Any], rules: dict[str, Any], rng: random.Random
) -> dict[str, Any]:
    """A result that satisfies `rules` (see generator/text/checks.py)."""
    if task == "product":
        name = rules["name"]
        return {"name": name, "description": f"The {name} is ready for daily use. {prose(rng, 30)}"}
    if task == "issue":
        return {"name": rules["name"], "description": f"Cases of this kind. {prose(rng, 12)}"}
    if task == "category":
        return {"description": f"Our {rules['mention'][0]} range. {prose(rng, 25)}"}
    if task == "knowledge":
        lines = [f"This article covers {m}." for m in rules.get("mention", [])]
        lines += [
            f"- Agents may offer {indefinite(w['phrase'])} within {w['days']} days of the purchase date."
            for w in rules.get("windows", [])
        ]
        lines += [f"- {s}." for s in rules.get("state", [])]
        lines.append(prose(rng, 40))
        return {
            "title": f"Article {rng.randint(1, 10**6)}",
            "summary": prose(rng, 8),
            "body": "\n".join(lines),
        }
    if task == "case":
        product = rules["mention"][0]
        return {
            "subject": f"Trouble with my {facts.get('noun', 'order')}",
            "description": f"Hello, my {product} has a problem. {prose(rng, 35)} {facts.get('customer_first', '')}",
        }
    if task == "email_thread":
        return {"messages": _emails(facts, rules, rng)}
    if task == "chat":
        return {"body": _chat(facts, rules, rng)}
    if task == "paraphrase":
        return {"text": f"Please answer the following. {rules['original']}"}
    if task == "product_mention":
        return _mention(facts, rules)
    raise ValueError(f"unknown task {task}")


def _offer_sentence(offer: dict[str, Any] | None) -> str:
    if not offer:
        return "I have logged the details and we will follow up by email."
    if offer.get("decline"):
        return "I'm sorry, the window for this issue has passed for your order, so I cannot do more."
    return f"I can offer you {indefinite(offer['phrase'])} for this."


def _emails(facts: dict[str, Any], rules: dict[str, Any], rng: random.Random) -> list[dict[str, str]]:
    subject = str(facts.get("case_subject", "Your case"))
    first = str(facts.get("customer_first", "there"))
    out = []
    for i, plan in enumerate(rules["messages"]):
        subj = subject if i == 0 else f"Re: {subject}"
        if plan["from"] == "customer":
            body = str(facts.get("case_description")) if i == 0 else f"Hi, {prose(rng, 20)}\n{first}"
        else:
            lines = [f"Hello {first},", f"Thanks for writing about the {rules['mention'][0]}."]
            if "offer" in plan:
                lines.append(_offer_sentence(plan["offer"]))
            lines += [prose(rng, 25), f"Best regards,\n{plan['agent']}\nSupport"]
            body = "\n\n".join(lines)
        out.append({"subject": subj, "body": body})
    return out


def _chat(facts: dict[str, Any], rules: dict[str, Any], rng: random.Random) -> str:
    cp, ap = rules["customer_prefix"], rules["agent_prefix"]
    product = rules["mention"][0]
    lines = [
        f"{cp}Hi, I have a problem with my {product}.",
        f"{ap}Hello, let me look at your order.",
        f"{cp}{prose(rng, 20)}",
        f"{ap}{_offer_sentence(rules.get('offer'))}",
        f"{cp}Thanks.",
        f"{ap}{prose(rng, 15)}",
    ]
    return "\n".join(lines)


def _mention(facts: dict[str, Any], rules: dict[str, Any]) -> dict[str, str]:
    target = rules["target"]
    others = [set(o.lower().split()) for o in rules["others"]]
    words = target.split()
    term = next((w for w in words if not any(w.lower() in o for o in others)), target)
    return {"mention": f"my {str(facts.get('noun', words[-1])).lower()}", "search_term": term}


# -- command line -------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--rate-limit-rate", type=float, default=0.0)
    parser.add_argument("--server-error-rate", type=float, default=0.0)
    args = parser.parse_args()
    fake = FakeOpenAI(
        FakeConfig(
            latency=args.latency,
            rate_limit_rate=args.rate_limit_rate,
            server_error_rate=args.server_error_rate,
        ),
        port=args.port,
    )
    fake.start()
    print(f"fake OpenAI server at {fake.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
