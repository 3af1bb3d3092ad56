"""The LLM writer: realistic text through any OpenAI-compatible endpoint, cached, rate-limited, verified.

One writer per process. It runs its own event loop on a private thread, which holds the async `openai`
client, the rate limiters, the adaptive concurrency gate and the stall breaker; `write()` may be awaited
from any thread and any event loop (each text shard may run under its own `asyncio.run`), and every call
shares those limits. The client never retries by itself (`max_retries=0`): this module owns the policy.

For each request (one record):
1. Render the prompt (`render.py`), compute its content address, and replay the answer from the cache
   (`cache.py`) when it is there; otherwise send it, honouring the gate, the RPM/TPM limiters and any
   pause a `Retry-After` asked for. 429s back off (Retry-After, else exponential with jitter, capped);
   5xx, timeouts, connection errors and 200s whose body is not a chat completion (cut JSON, an HTML page,
   an `{"error": ...}` envelope, no choices: what gateways and overloaded servers send; `read_completion`)
   retry with jitter (tenacity); the breaker ends the run when nothing succeeds for `max_stall_seconds`.
2. Parse the reply (JSON Schema structured output; or JSON mode or plain text with the schema in the
   prompt, for servers without it), coerce, validate against `OUTPUT_SCHEMAS`, run the content checks
   (`checks.py`). A failed reply gets a follow-up turn naming its problems, up to `max_attempts` calls.
3. Near-duplicates are found by the pipeline over the whole object (`schemas/textsim.py`, shard-independent)
   and sent back with an `attempt` counter, which the prompt turns into a variation hint (counted as
   `regenerations`).
A record that still fails is listed in the usage report, and fails the build unless the fallback is
"offline", in which case the offline writer fills it (and the count is reported).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import os
import random
import re
import threading
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator

from generator.rng import derive_seed
from generator.text.base import OUTPUT_SCHEMAS, TextKind, TextRequest, TextWriter
from generator.text.cache import CachedResponse, ResponseCache, default_cache_path, request_key
from generator.text.checks import check, norm
from generator.text.limits import AdaptiveGate, StallBreaker, backoff, first_of, retry_after_seconds
from generator.text.offline import OfflineWriter
from generator.text.render import Prompt, PromptEnv, render
from generator.text.shared import SharedLimits
from generator.text.usage import Usage
from schemas.errors import OrgseedError, Terminal, Transient

if TYPE_CHECKING:
    from schemas.profile import Profile

T = TypeVar("T")
OPENAI_URL = "https://api.openai.com/v1"
ResponseMode = Literal["json_schema", "json_object", "text"]
ResponseFormat = Literal["auto", "json_schema", "json_object", "text"]
MODES: tuple[ResponseMode, ...] = ("json_schema", "json_object", "text")
FALLBACKS = ("offline",)
_UNSUPPORTED_SCHEMA_KEYS = ("minLength", "maxLength", "pattern", "format", "minItems", "maxItems")
_SECRET_RE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{4})[A-Za-z0-9_\-]{8,}")


# -- errors -------------------------------------------------------------------------------------------------


class LLMError(OrgseedError):
    """Root of the LLM writer's errors: `host` is the endpoint's host (never the key)."""

    FIELDS: ClassVar[tuple[str, ...]] = ("host",)

    def __init__(self, message: str, *, host: str | None = None) -> None:
        super().__init__(message)
        self.host = host


class LLMConfigError(LLMError, Terminal):
    """The writer's settings cannot work (no model, no key, a bad endpoint or model name)."""


class LLMStalled(LLMError, Terminal):
    """No request succeeded for the configured stall limit (sustained rate limiting or an outage)."""

    FIELDS: ClassVar[tuple[str, ...]] = ("stalled_seconds", "retry_after")

    def __init__(
        self,
        message: str,
        *,
        host: str | None = None,
        stalled_seconds: float | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, host=host)
        self.stalled_seconds = stalled_seconds
        self.retry_after = retry_after


class LLMUnavailable(LLMError, Transient):
    """A request kept failing with server errors, timeouts or connection errors (`fault`: the last one)."""

    FIELDS: ClassVar[tuple[str, ...]] = ("stalled_seconds", "seen", "fault")

    def __init__(
        self,
        message: str,
        *,
        host: str | None = None,
        stalled_seconds: float | None = None,
        seen: dict[str, int] | None = None,
        fault: str | None = None,
    ) -> None:
        super().__init__(message, host=host)
        self.stalled_seconds = stalled_seconds
        self.seen = seen
        self.fault = fault


class LLMRequestRejected(LLMError, Terminal):
    """The endpoint rejected a request as malformed (400/422) for a reason other than the response format."""


class LLMVerificationError(LLMError, Terminal):
    """Records still failed their schema or content checks after every attempt."""

    FIELDS: ClassVar[tuple[str, ...]] = ("kind", "failed")

    def __init__(self, message: str, *, kind: str | None = None, failed: list[str] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.failed = failed


def estimated_tokens(params: dict[str, Any]) -> float:
    """What `--tpm` counts for a request before it is sent: its prompt at four characters a token, and half
    the completion it may ask for."""
    chars = sum(len(m["content"]) for m in params["messages"])
    limit = params.get("max_tokens") or params.get("max_completion_tokens") or 0
    return chars / 4 + limit / 2


class _FormatUnsupported(Exception):
    """The endpoint refused the response format (json_schema / json_object)."""


class BadAnswer(Exception):
    """A 2xx answer whose body is not a chat completion; retried like a 5xx (see `read_completion`).

    `what` names the fault ("an HTML page", "a cut-off or invalid JSON body", ...); `detail` shows a short,
    redacted excerpt of what came instead.
    """

    def __init__(self, what: str, detail: str = "") -> None:
        super().__init__(f"{what} ({detail})" if detail else what)
        self.what = what
        self.detail = detail


class _NotSent(Exception):
    """Dry run: the request is not in the cache and is not sent."""


# -- settings ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LLMSettings:
    """Everything the writer needs except the API key (read from the environment where it runs)."""

    model: str
    base_url: str | None = None
    cache: str | None = None  # path of the SQLite cache; None → default_cache_path()
    use_cache: bool = True
    concurrency: int = 8
    rpm: int | None = None
    tpm: int | None = None
    max_stall_seconds: float = 120.0
    fallback: str | None = None
    dry_run: bool = False
    usage_dir: str | None = None
    response_format: ResponseFormat = "auto"
    temperature: float | None = None
    request_timeout: float = 120.0
    max_retries: int = 6  # per request, on 5xx / timeouts / connection errors
    max_attempts: int = 3  # calls per record (first + follow-ups after failed checks)
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    limit_window_seconds: float = 60.0  # the window of --rpm/--tpm (tests shorten it)
    # set by the build for --runner dask: the name under which every worker's writer shares --concurrency and
    # --rpm and --tpm through the Dask scheduler (generator/text/shared.py); None: this process's own limits only
    shared_limits: str | None = None

    def options(self) -> tuple[tuple[str, Any], ...]:
        """As `RunSpec.writer_options`: hashable, picklable, and without any secret."""
        return tuple(sorted(asdict(self).items()))

    @staticmethod
    def from_options(options: Sequence[tuple[str, Any]] | Mapping[str, Any]) -> LLMSettings:
        given = dict(options)
        known = {f.name for f in fields(LLMSettings)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise LLMConfigError(f"Unknown LLM writer option(s): {', '.join(unknown)}.")
        return LLMSettings(**given)

    def cache_path(self) -> Path:
        return Path(self.cache).expanduser() if self.cache else default_cache_path()


def endpoint_url(base_url: str | None) -> str:
    """The endpoint without credentials, query or trailing slash (part of every cache key)."""
    if not base_url:
        return OPENAI_URL
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}".rstrip("/")


def endpoint_host(base_url: str | None) -> str:
    parts = urlsplit(endpoint_url(base_url))
    return parts.netloc


def resolve_api_key() -> str | None:
    """OPENAI_API_KEY from the environment, else from a `.env` file (searched from the working folder up)."""
    key = os.environ.get("OPENAI_API_KEY")
    if key:
        return key
    from dotenv import dotenv_values, find_dotenv

    path = find_dotenv(usecwd=True)
    if path:
        value = dotenv_values(path).get("OPENAI_API_KEY")
        if value:
            return value
    return None


def redact(text: str, secrets: Sequence[str | None] = ()) -> str:
    """`text` with any of `secrets` and anything shaped like an OpenAI key masked."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return _SECRET_RE.sub(r"\1***", text)


# -- helpers ----------------------------------------------------------------------------------------------


_TITLE_RE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAG_RE = re.compile(r"<[^>]*>")


def html_text(text: str) -> str | None:
    """An HTML page's title (else its text, tags dropped), or None when `text` does not look like HTML."""
    low = text[:2000].lstrip().lower()
    if not (low.startswith(("<!doctype html", "<html")) or "<body" in low or "<title" in low):
        return None
    title = _TITLE_RE.search(text)
    return " ".join((title.group(1) if title else _TAG_RE.sub(" ", text)).split())


def excerpt(text: str, limit: int = 160) -> str:
    """A short one-line view of a body: an HTML page by its title (else its text), anything else trimmed."""
    page = html_text(str(text))
    shown = " ".join(str(text).split()) if page is None else f"an HTML page: {page or '(empty)'}"
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _int_field(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)  # some servers count in floats
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadAnswer("a malformed chat completion", f"`{where}` is {excerpt(json.dumps(value), 60)}")
    return value


def read_completion(body: bytes, content_type: str = "application/json") -> CachedResponse:
    """The reply in a 2xx chat-completion body, or `BadAnswer` saying what came instead.

    Gateways, proxies and overloaded servers answer 200 with bodies that are not completions: JSON cut off
    mid-way, an HTML page (a captive portal, a gateway's error page), an `{"error": ...}` envelope, a
    completion with no choices. Each is a passing fault of the endpoint, not of the request, so the caller
    retries it like a 5xx. Only the fields orgseed reads are checked: `choices[0].message.content` (a string
    or null), `refusal`, `finish_reason` and the `usage` token counts (non-negative integers or absent).
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadAnswer("a body that is not UTF-8 text", f"byte {exc.start} of {len(body)}") from None
    if not text.strip():
        raise BadAnswer("an empty body")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        page = html_text(text)
        if page is not None:
            raise BadAnswer("an HTML page", excerpt(page) or "(empty)") from None
        kind = content_type.split(";")[0].strip().lower()
        if kind and "json" not in kind:
            raise BadAnswer("a non-JSON body", f"{kind}: {excerpt(text)}") from None
        where = f"at character {exc.pos} of {len(text)}" if isinstance(exc, json.JSONDecodeError) else ""
        raise BadAnswer("a cut-off or invalid JSON body", where or "nested too deeply") from None
    if not isinstance(data, dict):
        raise BadAnswer("JSON that is not an object", excerpt(text))
    if "error" in data and not data.get("choices"):
        err = data["error"]
        message = err.get("message") if isinstance(err, dict) else err
        raise BadAnswer("an error envelope", excerpt(str(message)))
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise BadAnswer("JSON without `choices`", excerpt(text))
    if not choices:
        raise BadAnswer("a completion with no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise BadAnswer("a malformed chat completion", "`choices[0].message` is not an object")
    content, refusal = message.get("content"), message.get("refusal")
    finish = choice.get("finish_reason")
    for name, value in (("content", content), ("refusal", refusal), ("finish_reason", finish)):
        if value is not None and not isinstance(value, str):
            raise BadAnswer("a malformed chat completion", f"`{name}` is {excerpt(json.dumps(value), 60)}")
    usage = data.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise BadAnswer("a malformed chat completion", "`usage` is not an object")
    usage = usage or {}
    return CachedResponse(
        content=content,
        refusal=refusal,
        finish_reason=finish,
        prompt_tokens=_int_field(usage.get("prompt_tokens"), "usage.prompt_tokens"),
        completion_tokens=_int_field(usage.get("completion_tokens"), "usage.completion_tokens"),
    )


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` without the keywords strict structured output rejects (checked locally instead)."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in _UNSUPPORTED_SCHEMA_KEYS}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return dict(strip(copy.deepcopy(dict(schema))))


_DIGESTS: dict[int, tuple[list[dict[str, str]], str]] = {}


def messages_digest(messages: list[dict[str, str]]) -> str:
    """SHA-256 of the canonical JSON of a message list, remembered for the last lists seen (a request's
    key is computed for several response formats and again when the answer is stored)."""
    hit = _DIGESTS.get(id(messages))
    if hit is not None and hit[0] is messages:
        return hit[1]
    text = json.dumps(messages, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if len(_DIGESTS) > 4096:
        _DIGESTS.clear()
    _DIGESTS[id(messages)] = (messages, digest)
    return digest


def max_tokens_for(kind: TextKind, facts: Mapping[str, Any]) -> int:
    base = {
        TextKind.PRODUCT: 400,
        TextKind.ISSUE: 300,
        TextKind.CATEGORY: 300,
        TextKind.KNOWLEDGE: 1500,
        TextKind.CASE: 600,
        TextKind.CHAT: 1200,
        TextKind.PARAPHRASE: 400,
        TextKind.PRODUCT_MENTION: 150,
    }
    if kind is TextKind.EMAIL_THREAD:
        return min(16384, 300 + 350 * len(facts.get("messages", [])))
    return base[kind]


def parse_json(content: str) -> Any:
    """JSON from a reply: the whole text, a fenced ```json block, or the outermost {...}."""
    text = content.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            return json.loads(text[start : end + 1])
        raise


def coerce(kind: TextKind, value: Any) -> Any:
    """Light repairs before validation: trim strings, drop unknown keys, join a chat given as lines."""
    if kind is TextKind.EMAIL_THREAD and isinstance(value, list):
        value = {"messages": value}
    if not isinstance(value, dict):
        return value
    props = OUTPUT_SCHEMAS[kind]["properties"]
    out: dict[str, Any] = {}
    for k, v in value.items():
        if k not in props:
            continue
        if (
            kind is TextKind.CHAT
            and k == "body"
            and isinstance(v, list)
            and all(isinstance(x, str) for x in v)
        ):
            v = "\n".join(v)
        if isinstance(v, str):
            v = v.strip()
        if kind is TextKind.EMAIL_THREAD and k == "messages" and isinstance(v, list):
            v = [
                {
                    mk: (mv.strip() if isinstance(mv, str) else mv)
                    for mk, mv in m.items()
                    if mk in ("subject", "body")
                }
                if isinstance(m, dict)
                else m
                for m in v
            ]
        out[k] = v
    return out


_VALIDATORS = {kind: Draft202012Validator(schema) for kind, schema in OUTPUT_SCHEMAS.items()}
_STRICT_SCHEMAS = {kind: strict_schema(schema) for kind, schema in OUTPUT_SCHEMAS.items()}  # read-only


def verify(
    kind: TextKind, rules: Mapping[str, Any], reply: CachedResponse
) -> tuple[dict[str, Any] | None, list[str]]:
    """The result of a reply and its problems (format, schema, content); problems empty → it passes."""
    if reply.refusal:
        return None, [f"The model refused: {reply.refusal[:200]}"]
    if reply.content is None or not reply.content.strip():
        return None, ["The reply was empty."]
    problems = []
    if reply.finish_reason == "length":
        problems.append("The reply was cut off at the length limit.")
    try:
        value = coerce(kind, parse_json(reply.content))
    except json.JSONDecodeError as exc:
        return None, [*problems, f"The reply is not a valid JSON object ({exc.msg} at position {exc.pos})."]
    errors = sorted(_VALIDATORS[kind].iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        return None, [*problems, *(f"Schema: {_where(e)}: {e.message}" for e in errors[:5])]
    if problems:
        return None, problems
    found = check(kind, rules, value)
    if kind is TextKind.PARAPHRASE and norm(str(value["text"])) == norm(str(rules["original"])):
        found.append("The paraphrase must reword the original, not repeat it.")  # a writer's duty, not a fact
    return (value, []) if not found else (None, found)


def _where(error: Any) -> str:
    return "/".join(str(p) for p in error.absolute_path) or "(top level)"


def feedback(problems: Sequence[str]) -> str:
    lines = "\n".join(f"- {p}" for p in problems[:8])
    extra = ""
    if any(p.startswith("The model refused") for p in problems):
        extra = " These are invented people and products for a software test of a customer-service benchmark."
    if any("cut off" in p for p in problems):
        extra += " Write shorter texts so the whole JSON object fits."
    return (
        f"Your reply did not pass the checks:\n{lines}\n{extra.strip()}\n"
        "Reply again with the complete, corrected JSON object only."
    ).replace("\n\n", "\n")


@dataclass
class _Record:
    req: TextRequest
    result: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    dry: bool = False


# -- the engine (private event loop) --------------------------------------------------------------------


class _Engine:
    """The writer's own event loop thread, with everything bound to that loop."""

    def __init__(self, writer: LLMWriter) -> None:
        self.w = writer
        s = writer.settings
        self.loop = asyncio.new_event_loop()
        self.db = ThreadPoolExecutor(max_workers=1, thread_name_prefix="orgseed-llm-cache")
        self.thread = threading.Thread(target=self._run, name="orgseed-llm", daemon=True)
        self.thread.start()
        # the run's cluster-wide limits, joined here (the calling thread: in a Dask worker, the task's)
        self.shared = SharedLimits.join(s.shared_limits, s.concurrency, s.rpm, s.limit_window_seconds, s.tpm)
        self.cache: ResponseCache | None = None
        if s.use_cache:
            self.cache = self.db.submit(ResponseCache, s.cache_path()).result()
        asyncio.run_coroutine_threadsafe(self._setup(), self.loop).result()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    async def _setup(self) -> None:
        s = self.w.settings
        self.gate = AdaptiveGate(s.concurrency)
        self.rpm: Any = None
        self.tpm: Any = None
        if s.rpm or s.tpm:
            from aiolimiter import AsyncLimiter

            self.rpm = AsyncLimiter(s.rpm, s.limit_window_seconds) if s.rpm else None
            self.tpm = AsyncLimiter(s.tpm, s.limit_window_seconds) if s.tpm else None
        self.breaker = StallBreaker(s.max_stall_seconds, self.w._stall_error)
        self.pause_until = 0.0
        self.rng = random.Random()
        self.watchdog = asyncio.ensure_future(self.breaker.watch())
        self.unsaved: list[tuple[str, str, str, str, CachedResponse]] = []
        self.flusher = asyncio.ensure_future(self._flush_every(0.2))
        self.client: Any = None
        if not s.dry_run:
            from openai import AsyncOpenAI

            self.client = AsyncOpenAI(
                api_key=self.w._api_key or "orgseed-no-key",
                base_url=s.base_url or OPENAI_URL,
                max_retries=0,
                timeout=s.request_timeout,
            )

    def submit(self, coro: Any) -> asyncio.Future[Any]:
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    async def in_db(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.db, fn, *args)

    async def flush(self) -> None:
        """Write the answers received since the last flush to the cache (one transaction)."""
        if self.cache is None or not self.unsaved:
            return
        entries, self.unsaved = self.unsaved, []
        await self.in_db(self.cache.put_many, entries)

    async def _flush_every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            await self.flush()

    async def _shutdown(self) -> None:
        self.watchdog.cancel()
        self.flusher.cancel()
        if self.shared is not None:
            self.shared.close()
        await self.flush()
        if self.client is not None:
            await self.client.close()

    def stop(self) -> None:
        if not self.thread.is_alive():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(timeout=10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            if self.cache is not None:
                self.db.submit(self.cache.close).result()
            self.db.shutdown(wait=True)
            self.loop.close()


class _RetryPolicy:
    """The retry policy of one request: which failures retry, how long to wait, when to give up.

    429s retry until the stall breaker decides (waiting what Retry-After asks, else exponential back-off with
    jitter up to `backoff_max`); a Retry-After longer than the stall limit trips the breaker at once. 5xx,
    408/409, timeouts, connection errors and bad 200s (`BadAnswer`) retry `max_retries` times with jittered
    back-off.
    """

    def __init__(self, writer: LLMWriter) -> None:
        self.w = writer
        self.failures = 0
        self.rate_limited = 0

    def retryable(self, exc: BaseException | None) -> bool:
        import openai

        if isinstance(exc, openai.RateLimitError | BadAnswer):
            return True
        if isinstance(exc, openai.APIStatusError):
            return exc.status_code >= 500 or exc.status_code in (408, 409)
        return isinstance(exc, openai.APIConnectionError)  # includes timeouts

    def stop(self, exc: BaseException | None) -> bool:
        import openai

        if isinstance(exc, openai.RateLimitError):
            return False  # the stall breaker decides when rate limiting has lasted too long
        self.failures += 1
        return self.failures > self.w.settings.max_retries

    def wait(self, exc: BaseException | None) -> float:
        import openai

        s = self.w.settings
        e = self.w._e
        headers = getattr(getattr(exc, "response", None), "headers", None)
        asked = retry_after_seconds(headers)
        if isinstance(exc, openai.RateLimitError):
            self.rate_limited += 1
            if asked is not None:
                if asked > s.max_stall_seconds:
                    e.breaker.trip(self.w._quota_error(asked))
                    return 0.0
                e.pause_until = max(e.pause_until, e.loop.time() + asked)
                return asked * (1 + 0.1 * e.rng.random())
            return backoff(self.rate_limited, s.backoff_base, s.backoff_max, e.rng)
        if asked is not None:
            return min(asked, s.backoff_max)
        return backoff(self.failures, s.backoff_base, s.backoff_max, e.rng)


# -- the writer -----------------------------------------------------------------------------------------


class LLMWriter(TextWriter):
    name = "openai"
    takes_llm_settings = True

    @classmethod
    def for_run(cls, seed: int, profile: Profile, options: tuple[tuple[str, Any], ...]) -> LLMWriter:
        return cls(LLMSettings.from_options(options), seed, PromptEnv.from_profile(profile))

    def __init__(
        self,
        settings: LLMSettings,
        seed: int,
        env: PromptEnv,
        api_key: str | None = None,
    ) -> None:
        if not settings.model:
            raise LLMConfigError("The LLM writer needs a model: pass --model (e.g. --model gpt-4o-mini).")
        if settings.response_format not in ("auto", *MODES):
            raise LLMConfigError(
                f"Unknown response format `{settings.response_format}`; use auto, {', '.join(MODES)}."
            )
        if settings.fallback not in (None, *FALLBACKS):
            raise LLMConfigError(f"Unknown fallback `{settings.fallback}`; the only fallback is `offline`.")
        self.settings = settings
        self.seed = seed
        self.env = env
        self._api_key = api_key if api_key is not None else (None if settings.dry_run else resolve_api_key())
        if not settings.dry_run and not self._api_key and not settings.base_url:
            raise LLMConfigError(
                "No API key for OpenAI: set OPENAI_API_KEY (or put it in a .env file), or point --base-url "
                "at a server that needs none."
            )
        self.endpoint = endpoint_url(settings.base_url)
        self.usage = Usage(settings.model, endpoint_host(settings.base_url), settings.dry_run)
        self.mode = "json_schema" if settings.response_format == "auto" else settings.response_format
        self._engine: _Engine | None = None
        self._lock = threading.Lock()
        self._snapshot_name = f"usage-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._offline = OfflineWriter(seed, env.company)

    # -- interface ---------------------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.settings.model,
            "base_url_host": endpoint_host(self.settings.base_url),
        }

    async def write(self, kind: TextKind, requests: Sequence[TextRequest]) -> list[dict[str, Any]]:
        if not requests:
            return []
        engine = self._ensure_engine()
        result: list[dict[str, Any]] = await engine.submit(self._batch(TextKind(kind), list(requests)))
        return result

    def forget_memos(self) -> None:
        self._offline.forget_memos()  # the stand-in writer's

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            engine, self._engine = self._engine, None
        if engine is not None:
            engine.stop()

    def _ensure_engine(self) -> _Engine:
        with self._lock:
            if self._engine is None:
                self._engine = _Engine(self)
            return self._engine

    @property
    def _e(self) -> _Engine:
        assert self._engine is not None
        return self._engine

    # -- a batch -----------------------------------------------------------------------------------------

    async def _batch(self, kind: TextKind, requests: list[TextRequest]) -> list[dict[str, Any]]:
        e = self._e
        e.breaker.raise_if_tripped()
        recs = [_Record(r) for r in requests]
        rewrites = sum(1 for r in requests if int(r.facts.get("attempt", 0) or 0) > 0)
        self.usage.add(kind.value, records=len(recs), regenerations=rewrites)
        try:
            known = await self._prefetch(kind, requests)
            # Records start a few at a time (twice the concurrency), so preparing the whole batch does not
            # delay the first requests and preparation overlaps with the network.
            admit = asyncio.Semaphore(max(16, 2 * self.settings.concurrency))
            await first_of(
                {asyncio.ensure_future(self._admitted(admit, kind, r, 0, known)) for r in recs}, e.breaker
            )
            return self._finish(kind, recs)
        finally:
            await e.flush()
            self._save_usage()

    async def _admitted(
        self,
        admit: asyncio.Semaphore,
        kind: TextKind,
        rec: _Record,
        variant: int,
        known: Mapping[str, CachedResponse | None] | None = None,
    ) -> None:
        async with admit:
            await self._solve(kind, rec, variant, known)

    async def _prefetch(
        self, kind: TextKind, requests: list[TextRequest]
    ) -> dict[str, CachedResponse | None]:
        """The cached answers to every record's first request, in one query (None: known to be missing)."""
        e = self._e
        if e.cache is None:
            return {}
        keys = []
        for req in requests:
            variant = int(req.facts.get("attempt", 0) or 0)
            prompt = render(kind, req.facts, self.env, variant)
            limit = max_tokens_for(kind, req.facts)
            seed = self._seed(kind, req.key, variant, 0)
            keys += [
                self._key(prompt.template_version, self._params(kind, mode, prompt.messages, limit, seed))
                for mode in MODES
            ]
        found: dict[str, CachedResponse] = await e.in_db(e.cache.get_many, keys)
        return {k: found.get(k) for k in keys}

    def _finish(self, kind: TextKind, recs: list[_Record]) -> list[dict[str, Any]]:
        failed = [r for r in recs if r.result is None and not r.dry]
        dry = [r for r in recs if r.dry]
        fill = self.settings.fallback == "offline"
        for r in failed:
            self.usage.failures.append(
                {"kind": kind.value, "key": r.req.key, "reasons": r.problems[:5], "filled": fill}
            )
        if failed:
            self.usage.add(kind.value, failed=len(failed), filled=len(failed) if fill else 0)
        if failed and not fill:
            first = failed[0]
            raise LLMVerificationError(
                f"{len(failed)} of {len(recs)} {kind.value} texts from `{self.settings.model}` failed their checks "
                f"after {self.settings.max_attempts} attempts each (e.g. record `{first.req.key}`: "
                f"{(first.problems or ['unknown'])[0]}). The failures are listed in reports/llm_usage.json. "
                "Rerun with --fallback offline to fill such records with the offline writer, or use a stronger "
                "--model; answers already received are cached, so a rerun only asks again for these.",
                kind=kind.value,
                failed=[r.req.key for r in failed],
            )
        stand_in = failed + dry
        if stand_in:
            texts = self._offline.write_sync(kind, [r.req for r in stand_in])
            for r, t in zip(stand_in, texts, strict=True):
                r.result = t
        if dry:
            # A rough output estimate: the offline text's length, half as long again (models write more).
            chars = sum(len(json.dumps(r.result)) for r in dry)
            self.usage.add(kind.value, estimated_completion_tokens=int(chars / 4 * 1.5) + 10 * len(dry))
        out = []
        for r in recs:
            assert r.result is not None
            out.append(r.result)
        return out

    def _save_usage(self) -> None:
        if self.settings.usage_dir:
            self.usage.save(Path(self.settings.usage_dir), self._snapshot_name)

    # -- a record ----------------------------------------------------------------------------------------

    async def _solve(
        self,
        kind: TextKind,
        rec: _Record,
        variant: int,
        known: Mapping[str, CachedResponse | None] | None = None,
    ) -> None:
        # A caller asking again for a record (facts["attempt"] = n) wants another wording, as a rewrite does.
        variant += int(rec.req.facts.get("attempt", 0) or 0)
        prompt: Prompt = render(kind, rec.req.facts, self.env, variant)
        messages = list(prompt.messages)
        limit = max_tokens_for(kind, rec.req.facts)
        rec.result, rec.problems = None, []
        for attempt in range(self.settings.max_attempts):
            seed = self._seed(kind, rec.req.key, variant, attempt)
            try:
                reply = await self._complete(
                    kind, prompt.template_version, messages, limit, seed, known if attempt == 0 else None
                )
            except _NotSent:
                rec.dry = True
                return
            if attempt > 0:
                self.usage.add(kind.value, repairs=1)
            value, problems = verify(kind, prompt.rules, reply)
            if value is not None:
                rec.result, rec.problems = value, []
                return
            rec.problems = problems
            if reply.finish_reason == "length":
                limit = min(16384, limit * 2)
            messages = [
                *prompt.messages,
                {"role": "assistant", "content": reply.content or (reply.refusal or "")},
                {"role": "user", "content": feedback(problems)},
            ]

    def _seed(self, kind: TextKind, key: str, variant: int, attempt: int) -> int:
        """The per-request seed: distinct per record, rewrite and attempt; sent and part of the cache key."""
        return derive_seed(self.seed, "llm", kind.value, key, variant, attempt) % (2**31)

    # -- one completion: cache, then the endpoint -------------------------------------------------------

    def _params(
        self, kind: TextKind, mode: str, messages: list[dict[str, str]], limit: int, seed: int
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.settings.model, "messages": messages, "seed": seed}
        if mode == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": f"orgseed_{kind.value}",
                    "schema": _STRICT_SCHEMAS[kind],
                    "strict": True,
                },
            }
        elif mode == "json_object":
            params["response_format"] = {"type": "json_object"}
        # OpenAI's newer models take only max_completion_tokens; other servers know max_tokens.
        params["max_completion_tokens" if self.settings.base_url is None else "max_tokens"] = limit
        if self.settings.temperature is not None:
            params["temperature"] = self.settings.temperature
        return params

    def _key(self, template: str, params: Mapping[str, Any]) -> str:
        """The cache key of a request: its messages enter as their own digest (computed once per list)."""
        request = {**params, "messages": messages_digest(params["messages"])}
        return request_key({"endpoint": self.endpoint, "template": template, "request": request})

    async def _complete(
        self,
        kind: TextKind,
        template: str,
        messages: list[dict[str, str]],
        limit: int,
        seed: int,
        known: Mapping[str, CachedResponse | None] | None = None,
    ) -> CachedResponse:
        e = self._e
        if e.cache is not None:
            order = [self.mode, *[m for m in MODES if m != self.mode]]
            for mode in order:
                key = self._key(template, self._params(kind, mode, messages, limit, seed))
                hit = known[key] if known is not None and key in known else await e.in_db(e.cache.get, key)
                if hit is not None:
                    self.usage.add(
                        kind.value,
                        cache_hits=1,
                        cached_prompt_tokens=hit.prompt_tokens,
                        cached_completion_tokens=hit.completion_tokens,
                    )
                    return hit
        if self.settings.dry_run:
            chars = sum(len(m["content"]) for m in messages)
            self.usage.add(
                kind.value,
                estimated_requests=1,
                estimated_prompt_tokens=chars // 4 + 8 * len(messages),
                estimated_completion_tokens=0,  # filled by the caller from the stand-in text
            )
            raise _NotSent()
        while True:
            mode = self.mode
            params = self._params(kind, mode, messages, limit, seed)
            try:
                reply = await self._send(kind, params, mode)
            except _FormatUnsupported:
                self._downgrade(mode)
                continue
            if e.cache is not None:  # written behind, in batches (flushed at the latest when the batch ends)
                e.unsaved.append(
                    (self._key(template, params), self.settings.model, kind.value, template, reply)
                )
            self.usage.add(
                kind.value,
                requests=1,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
            )
            return reply

    def _downgrade(self, failed_mode: str) -> None:
        if self.mode != failed_mode:
            return  # another request already stepped down
        nxt = MODES.index(failed_mode) + 1
        if nxt >= len(MODES):  # pragma: no cover - text mode sends no response_format
            raise LLMRequestRejected("The endpoint rejected plain-text requests.")
        self.mode = MODES[nxt]
        self.usage.error("format_downgrades")

    async def _send(self, kind: TextKind, params: dict[str, Any], mode: str) -> CachedResponse:
        """One request with the retry policy; raises an `LLMError` (and trips the breaker) when it gives up.

        The first attempt goes straight out; only a retryable failure enters tenacity's loop (jittered waits,
        Retry-After, the attempt limit), which keeps the common path cheap.
        """
        import openai
        from tenacity import AsyncRetrying, retry_if_exception

        e = self._e
        policy = _RetryPolicy(self)
        e.breaker.begin()
        try:
            try:
                return await self._send_once(kind, params, mode)
            except Exception as exc:
                if not policy.retryable(exc) or policy.stop(exc):
                    raise
                await asyncio.sleep(policy.wait(exc))
            async for attempt in AsyncRetrying(
                retry=retry_if_exception(policy.retryable),
                stop=lambda state: policy.stop(state.outcome.exception() if state.outcome else None),
                wait=lambda state: policy.wait(state.outcome.exception() if state.outcome else None),
                reraise=True,
            ):
                with attempt:
                    e.breaker.raise_if_tripped()
                    return await self._send_once(kind, params, mode)
        except (openai.APIError, BadAnswer) as exc:
            raise self._give_up(kind, exc) from None
        finally:
            e.breaker.end()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send_once(self, kind: TextKind, params: dict[str, Any], mode: str) -> CachedResponse:
        import openai

        e = self._e
        await self._wait_pause()
        tokens = estimated_tokens(params)
        shared = e.shared.slot(tokens) if e.shared is not None else contextlib.nullcontext()
        async with e.gate.slot() as slot, shared:
            if mode != self.mode:
                raise _FormatUnsupported()  # another request found the format unsupported meanwhile
            if e.rpm is not None:
                await e.rpm.acquire()
            if e.tpm is not None:
                await e.tpm.acquire(min(float(self.settings.tpm or 1), tokens))
            await self._wait_pause()
            try:
                # response_format travels in extra_body: the same JSON, without the SDK walking the schema's
                # TypedDict on every call (~0.4 ms of CPU each, a fifth of the client's cost per request).
                body = {k: v for k, v in params.items() if k != "response_format"}
                extra = (
                    {"response_format": params["response_format"]} if "response_format" in params else None
                )
                raw = await e.client.chat.completions.with_raw_response.create(**body, extra_body=extra)
                http = raw.http_response
                reply = read_completion(http.content, http.headers.get("content-type", ""))
            except BadAnswer as exc:
                self.usage.error("bad_answers")
                e.breaker.note(f"200 with {exc.what}")
                raise
            except openai.RateLimitError:
                slot.outcome = "throttled"
                self.usage.error("rate_limited")
                e.breaker.note("429")
                raise
            except openai.BadRequestError as exc:
                if params.get("response_format") and _format_refused(exc, params["response_format"]["type"]):
                    raise _FormatUnsupported() from exc
                raise
            except openai.APITimeoutError:
                self.usage.error("timeouts")
                e.breaker.note("timeout")
                raise
            except openai.APIConnectionError:
                self.usage.error("connection_errors")
                e.breaker.note("connection error")
                raise
            except openai.APIStatusError as exc:
                if exc.status_code >= 500:
                    self.usage.error("server_errors")
                    e.breaker.note(f"{exc.status_code}")
                raise
            slot.outcome = "ok"
            e.breaker.progress()
        return reply

    async def _wait_pause(self) -> None:
        e = self._e
        while True:
            delay = e.pause_until - e.loop.time()
            if delay <= 0:
                return
            await asyncio.sleep(delay)

    # -- error messages -----------------------------------------------------------------------------------

    def _host(self) -> str:
        return endpoint_host(self.settings.base_url)

    def _stall_error(self, stalled: float, since: Mapping[str, int]) -> LLMError:
        seen = ", ".join(f"{n}× {what}" for what, n in sorted(since.items())) or "no answer at all"
        s = self.settings
        if "429" not in since:  # no rate limiting: the endpoint itself keeps failing
            return LLMUnavailable(
                f"No request to the LLM endpoint `{self._host()}` succeeded for {stalled:.0f} s ({seen}); "
                f"stopped at --max-stall-seconds {s.max_stall_seconds:g}. The endpoint keeps failing: check "
                "--base-url (an OpenAI-compatible API, usually ending in /v1) and the server's health, raise "
                "--request-timeout if its answers are slow, or rerun later. Answers already received are "
                "cached: rerunning resumes from them.",
                host=self._host(),
                stalled_seconds=round(stalled, 1),
                seen=dict(since),
            )
        return LLMStalled(
            f"No request to the LLM endpoint `{self._host()}` succeeded for {stalled:.0f} s ({seen}); "
            f"stopped at --max-stall-seconds {s.max_stall_seconds:g}. Lower --concurrency (now {s.concurrency})"
            f"{'' if s.rpm else ' or set --rpm'}{'' if s.tpm else '/--tpm'} to stay under your rate limits, raise "
            "the limits with your provider, or raise --max-stall-seconds. Answers already received are cached: "
            "rerunning resumes from them.",
            host=self._host(),
            stalled_seconds=round(stalled, 1),
        )

    def _quota_error(self, asked: float) -> LLMError:
        return LLMStalled(
            f"The LLM endpoint `{self._host()}` asked orgseed to wait {asked:.0f} s (Retry-After), longer than "
            f"--max-stall-seconds {self.settings.max_stall_seconds:g}: its quota is probably used up. Wait and "
            "rerun (answers already received are cached), lower --rpm/--tpm, or raise --max-stall-seconds.",
            host=self._host(),
            retry_after=asked,
        )

    def _give_up(self, kind: TextKind, exc: BaseException) -> BaseException:
        """The writer error for an exception the retry policy did not absorb; trips the breaker."""
        import openai

        e = self._e
        if e.breaker.error is not None:
            return e.breaker.error
        host = self._host()
        err: LLMError
        if isinstance(exc, BadAnswer):
            shown = f" ({redact(exc.detail, [self._api_key])})" if exc.detail else ""
            err = LLMUnavailable(
                f"A {kind.value} request to `{host}` still failed after {self.settings.max_retries} retries: the "
                f"endpoint answered 200 with {exc.what}{shown}, not a chat completion. A proxy or gateway in "
                "front of the model may be failing, or --base-url may not point at an OpenAI-compatible API "
                "(it usually ends in /v1): check it, or rerun later (answers already received are cached, so a "
                "rerun resumes).",
                host=host,
                fault=exc.what,
            )
            e.breaker.trip(err)
            return err
        msg = str(getattr(exc, "message", exc))
        body = getattr(exc, "body", None)
        if isinstance(body, str) and body.strip():  # an error body that is not JSON: a page, plain text
            msg = f"{msg}, {excerpt(body)}"
        msg = redact(excerpt(msg, 300), [self._api_key])
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            err = LLMConfigError(
                f"The LLM endpoint `{host}` refused the API key ({exc.status_code}: {msg}). Set OPENAI_API_KEY "
                "(or .env) to a key valid for this endpoint.",
                host=host,
            )
        elif isinstance(exc, openai.NotFoundError):
            err = LLMConfigError(
                f"The LLM endpoint `{host}` does not know model `{self.settings.model}` (404: {msg}). Check "
                "--model and --base-url.",
                host=host,
            )
        elif (
            isinstance(exc, openai.APIStatusError)
            and exc.status_code < 500
            and exc.status_code not in (408, 409, 429)
        ):
            err = LLMRequestRejected(
                f"The LLM endpoint `{host}` rejected a {kind.value} request ({exc.status_code}: {msg}). Check "
                "that --model supports chat completions with these parameters.",
                host=host,
            )
        else:
            what = f"HTTP {exc.status_code}" if isinstance(exc, openai.APIStatusError) else type(exc).__name__
            err = LLMUnavailable(
                f"A {kind.value} request to `{host}` still failed after {self.settings.max_retries} retries "
                f"({what}: {msg}). The endpoint may be down or overloaded: check --base-url, or rerun later "
                "(answers already received are cached, so a rerun resumes).",
                host=host,
            )
        e.breaker.trip(err)
        return err


def _format_refused(exc: Any, mode: str) -> bool:
    """Does a 400 say the endpoint does not support this response format?"""
    text = str(getattr(exc, "message", "")) + " " + json.dumps(getattr(exc, "body", None), default=str)
    low = text.lower()
    return ("response_format" in low or mode in low) and any(
        w in low for w in ("not support", "unsupported", "invalid", "unknown", "not allowed", "unrecognized")
    )
