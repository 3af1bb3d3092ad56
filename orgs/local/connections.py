"""Connection-level work uvicorn does not do: limits on request heads, and one write per response.

uvicorn times out idle kept-alive connections, but nothing bounds how long a client may take to send a
request's headers, nor (with httptools) how large they may be: a client trickling a byte a second, or
never finishing its headers, holds a connection and a file descriptor forever, and an ASGI middleware
cannot help (the app is only called once the headers are complete). `guarded_protocol()` wraps uvicorn's
HTTP protocol in `HeadGuard`, which passes everything through and, per connection:

- starts a clock when a request's first byte arrives (or when the connection opens) and, unless the
  head is complete (`\\r\\n\\r\\n` seen) within `ServeLimits.header_timeout` seconds, answers 408 (or, when
  nothing at all was sent, just closes);
- answers 431 once a head passes four times `ServeLimits.max_head_bytes` (a head under that is read,
  and `RequestGuard` in `guard.py` answers 414 or 431 by Salesforce's exact rule);
- learns that the request has been answered from the ASGI app (`RequestGuard` in `guard.py` calls
  `Connections.finished` with the scope's client address), and then starts watching the next head;
- gives uvicorn's protocol a `CoalescingTransport`: uvicorn writes a response's head and its body as two
  writes, over TLS two records, two encryptions and two send() calls; the writes made in one event-loop
  step go out as one (25-33 µs less server CPU per call out of 250-300 µs for a one-row query, measured
  when the same trick sat in a subclass of uvicorn's private protocol class).

The wrapper only uses the `asyncio.Protocol` interface of the protocol it wraps. What it needs from
uvicorn beyond its documented `Config(http=<protocol class>)` is in this module alone: the import path of
uvicorn's own protocol classes (`uvicorn.config.HTTP_PROTOCOLS`) and the keyword arguments uvicorn gives
a protocol class (passed through unread). `tests/orgs/local/test_connections.py` fails loudly when
either changes.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from orgs.local.errors import OrgApiError, error_body
from orgs.local.limits import ServeLimits

Address = tuple[str, int]
_HEAD_END = b"\r\n\r\n"
HEAD_CAP = 4  # heads are read up to this many times ServeLimits.max_head_bytes
LINGER = 2.0  # seconds a refused connection is drained before it is closed
_REASONS = {408: "Request Timeout", 431: "Request Header Fields Too Large"}


def uvicorn_protocol(http: str) -> type[asyncio.Protocol]:
    """uvicorn's own HTTP protocol class for `http` ("httptools" or "h11")."""
    from uvicorn.config import HTTP_PROTOCOLS
    from uvicorn.importer import import_from_string

    cls: type[asyncio.Protocol] = import_from_string(HTTP_PROTOCOLS[http])
    return cls


class Connections:
    """The open connections of one server, by client address (as the ASGI scope names it)."""

    def __init__(self) -> None:
        self.open: dict[Address, HeadGuard] = {}

    def finished(self, client: Any) -> None:
        """The request from `client` (the ASGI scope's `client`) has been answered."""
        if client:
            guard = self.open.get((str(client[0]), int(client[1])))
            if guard is not None:
                guard.request_finished()

    def unread(self, client: Any) -> None:
        """The request from `client` is being refused before its body was read whole: the connection's
        close is to be a lingering one (see `HeadGuard.linger`)."""
        if client:
            guard = self.open.get((str(client[0]), int(client[1])))
            if guard is not None:
                guard.unread_body = True


class HeadGuard(asyncio.Protocol):
    """uvicorn's protocol (`inner`), with a time-out and a size limit on each request's head."""

    inner_class: type[asyncio.Protocol]
    limits: ServeLimits
    connections: Connections

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.inner = self.inner_class(*args, **kwargs)  # uvicorn's arguments, passed through
        self.transport: Any = None
        self.address: Address | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.received = 0  # bytes of the current head so far
        self.head_done = False
        self.tail = b""  # the last bytes seen, for a head end split across reads
        self.draining = False  # refused: what still arrives is read and dropped until the close
        self.unread_body = False  # the app refused a body it did not read whole (`Connections.unread`)

    # -- asyncio.Protocol, passed through

    def connection_made(self, transport: Any) -> None:  # an asyncio.Transport (uvloop's are not subclasses)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            self.address = (str(peer[0]), int(peer[1]))
            self.connections.open[self.address] = self
        self.arm()
        coalescing = CoalescingTransport(transport, asyncio.get_running_loop(), self)
        self.inner.connection_made(cast(asyncio.Transport, coalescing))  # it answers a Transport's calls

    def data_received(self, data: bytes) -> None:
        if self.draining or (not self.head_done and self.watch(data)):
            return
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        if self.draining:
            self.transport.close()
            return False
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm()
        if self.address is not None and self.connections.open.get(self.address) is self:
            del self.connections.open[self.address]
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    # -- the head

    def watch(self, data: bytes) -> bool:
        """Account for `data` of a head; True when the connection was refused for it."""
        if self.timer is None:
            self.arm()
        end = (self.tail + data).find(_HEAD_END)
        if end >= 0:
            self.received += end + len(_HEAD_END) - len(self.tail)
        else:
            self.received += len(data)
        if self.received > HEAD_CAP * self.limits.max_head_bytes:
            self.refuse(
                431,
                OrgApiError(
                    f"The request's URI and headers are much larger than {self.limits.max_head_bytes:,} bytes "
                    "(Salesforce's limit for the two together).",
                    error_code="REQUEST_HEADER_FIELDS_TOO_LARGE",
                    status=431,
                ),
            )
            return True
        if end >= 0:
            self.head_done = True
            self.disarm()
        else:
            self.tail = (self.tail + data)[-3:]
        return False

    def request_finished(self) -> None:
        self.head_done = False
        self.received = 0
        self.tail = b""

    def arm(self) -> None:
        self.disarm()
        loop = asyncio.get_running_loop()
        self.timer = loop.call_later(self.limits.header_timeout, self.timed_out)

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def timed_out(self) -> None:
        self.timer = None
        if self.head_done or self.transport is None or self.transport.is_closing():
            return
        if self.received == 0:  # nothing sent since the connection opened or the last answer
            self.transport.close()
            return
        self.refuse(
            408,
            OrgApiError(
                f"The request's headers did not arrive within {self.limits.header_timeout:g} s; send the "
                "whole request at once.",
                error_code="REQUEST_TIMEOUT",
                status=408,
            ),
        )

    def refuse(self, status: int, exc: OrgApiError) -> None:
        """Answer `status` with the error (the request's path is not known yet) and close."""
        self.disarm()
        if self.transport is None or self.transport.is_closing():
            return
        body, media_type = error_body(exc, "")
        head = (
            f"HTTP/1.1 {status} {_REASONS[status]}\r\ncontent-type: {media_type}\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode() + body)
        self.linger()

    def linger(self) -> None:
        """Close after the answer, lingering: closing with unread data would reset the connection and the
        client could lose the answer, so what the client still sends is read and dropped for a moment (or
        until its EOF)."""
        transport = self.transport
        self.draining = True
        if transport.can_write_eof():
            transport.write_eof()
        asyncio.get_running_loop().call_later(LINGER, transport.close)


class CoalescingTransport:
    """A transport whose writes made in one event-loop step go out as one write. Everything else is the
    wrapped transport's; `close()` sends what is pending first (and lingers, when the owning guard says
    a body was left unread), `abort()` drops it."""

    __slots__ = ("_guard", "_loop", "_pending", "_transport")

    def __init__(
        self, transport: Any, loop: asyncio.AbstractEventLoop, guard: HeadGuard | None = None
    ) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._guard = guard

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(bytes(data))

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()
        guard = self._guard
        if (
            guard is not None
            and guard.unread_body
            and not guard.draining
            and not self._transport.is_closing()
        ):
            guard.linger()
        else:
            self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def guarded_protocol(http: str, limits: ServeLimits, connections: Connections) -> type[asyncio.Protocol]:
    """A protocol class for uvicorn.Config(http=...): uvicorn's `http` protocol inside a HeadGuard."""
    inner = uvicorn_protocol(http)
    attrs: dict[str, Any] = {"inner_class": inner, "limits": limits, "connections": connections}
    alpn = getattr(inner, "alpn_protocols", None)
    if alpn is not None:
        attrs["alpn_protocols"] = alpn
    return type(f"Guarded{inner.__name__}", (HeadGuard,), attrs)
