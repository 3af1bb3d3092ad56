"""Request limits at the ASGI level: URI and header sizes, body sizes, and the time a body may take.

`RequestGuard` wraps the app. Before the app sees a request it refuses, in Salesforce's error shape:

- 414 when the URI (path and query string) is longer than `max_head_bytes`, and 431 when the URI and
  the headers together are (Salesforce: 16,384 bytes);
- 413 when the declared `Content-Length` passes the route's body limit: `max_login_bytes` for the SOAP
  login, `max_upload_bytes` for Bulk API 2.0 ingest uploads (`.../jobs/ingest/<id>/batches`),
  `max_body_bytes` for every other body.

While the app reads the body, a body larger than announced (or sent in chunks) is refused with 413 once
it passes the limit, and a body still incomplete `body_timeout` seconds after the headers is refused with
408; both close the connection afterwards (the rest of the body is never read). When the request has been
answered it tells `Connections` (`connections.py`), which then starts timing the connection's next
request head.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orgs.local.connections import Connections
from orgs.local.errors import SOAP_PREFIX, OrgApiError, error_body
from orgs.local.limits import ServeLimits


class BodyTooLarge(OrgApiError):
    status = 413
    default_code = "REQUEST_ENTITY_TOO_LARGE"
    close_connection = True


class BodyTimeout(OrgApiError):
    status = 408
    default_code = "REQUEST_TIMEOUT"
    close_connection = True


def body_limit(path: str, limits: ServeLimits) -> tuple[int, str]:
    """The largest body `path` accepts, and what the limit is for."""
    if path.startswith(SOAP_PREFIX):
        return limits.max_login_bytes, "a SOAP login request"
    if "/jobs/ingest/" in path and path.rstrip("/").endswith("/batches"):
        return limits.max_upload_bytes, "a Bulk API 2.0 upload"
    return limits.max_body_bytes, "a request body"


async def send_error(send: Send, exc: OrgApiError, path: str) -> None:
    """Answer with `exc` directly (for refusals made before the app runs)."""
    body, media_type = error_body(exc, path)
    headers = [(b"content-type", media_type.encode()), (b"content-length", str(len(body)).encode())]
    if exc.close_connection:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": exc.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RequestGuard:
    """ASGI middleware enforcing `ServeLimits` on each request (see the module docstring)."""

    def __init__(self, app: ASGIApp, limits: ServeLimits, connections: Connections | None = None) -> None:
        self.app = app
        self.limits = limits
        self.connections = connections

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            refusal = self.refusal(scope)
            if refusal is not None:
                if refusal.close_connection and self.connections is not None:
                    self.connections.unread(scope.get("client"))
                await send_error(send, refusal, scope["path"])
                return
            await self.app(scope, self.receiver(scope, receive), send)
        finally:
            if self.connections is not None:
                self.connections.finished(scope.get("client"))

    def refusal(self, scope: Scope) -> OrgApiError | None:
        limits = self.limits
        uri = len(scope.get("raw_path") or scope["path"].encode()) + 1 + len(scope.get("query_string", b""))
        if uri > limits.max_head_bytes:
            return OrgApiError(
                f"The URI is {uri:,} bytes long; Salesforce accepts at most {limits.max_head_bytes:,}. Send "
                "long SOQL through Bulk API 2.0 (POST jobs/query), or split it (e.g. chunks of a long IN "
                "list).",
                error_code="URI_TOO_LONG",
                status=414,
            )
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        if uri + sum(len(k) + len(v) + 4 for k, v in headers) > limits.max_head_bytes:
            return OrgApiError(
                f"The URI and headers together are larger than {limits.max_head_bytes:,} bytes (Salesforce's "
                "limit).",
                error_code="REQUEST_HEADER_FIELDS_TOO_LARGE",
                status=431,
            )
        for key, value in headers:
            if key == b"content-length":
                limit, what = body_limit(scope["path"], limits)
                if not value.isdigit() or len(value) > 18:
                    return OrgApiError(
                        f"Content-Length must be a number of bytes (got {value[:40]!r}).",
                        error_code="MALFORMED_REQUEST",
                        close_connection=True,
                    )
                if int(value) > limit:
                    return BodyTooLarge(
                        f"The body is {int(value):,} bytes; {what} may be at most {limit:,} bytes.",
                    )
        return None

    def receiver(self, scope: Scope, receive: Receive) -> Callable[[], Awaitable[Message]]:
        """`receive`, refusing a body that passes the route's limit or arrives too slowly."""
        limit, what = body_limit(scope["path"], self.limits)
        timeout = self.limits.body_timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        received = 0
        complete = False

        async def guarded() -> Message:
            nonlocal received, complete
            if complete:  # after the body: waiting for a disconnect is not limited
                return await receive()
            try:
                async with asyncio.timeout(max(0.0, deadline - loop.time())):
                    message = await receive()
            except TimeoutError:
                self.left_unread(scope)
                raise BodyTimeout(
                    f"The request body did not arrive within {timeout:g} s of its headers "
                    f"({received:,} bytes came); send the whole request at once."
                ) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    self.left_unread(scope)
                    raise BodyTooLarge(f"The body passed {limit:,} bytes, the most {what} may have.")
                complete = not message.get("more_body", False)
            return message

        return guarded

    def left_unread(self, scope: Scope) -> None:
        """The body of the request in `scope` is refused before it was read whole."""
        if self.connections is not None:
            self.connections.unread(scope.get("client"))
