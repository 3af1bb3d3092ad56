"""Slow and oversized request heads and bodies (connections.py, guard.py), over real sockets.

These tests also fail loudly if uvicorn changes what `connections.py` relies on (the import path of its
protocol classes, the arguments it gives a protocol class): the guarded server would not start or answer.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orgs.local.connections import CoalescingTransport, uvicorn_protocol
from orgs.local.limits import ServeLimits
from orgs.local.serve import LocalServer

LIMITS = ServeLimits(header_timeout=0.5, body_timeout=0.5)
GET = b"GET /services/data/ HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.fixture(scope="module")
def quick(served_bundle: Path, server: LocalServer) -> Iterator[LocalServer]:
    with LocalServer(served_bundle, tls=False, token="t", org=server.org, limits=LIMITS) as srv:
        yield srv


def connect(srv: LocalServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", srv.port), timeout=10)


def read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def read_response(sock: socket.socket) -> bytes:
    """One response (this suite's are small and carry a Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def test_uvicorn_protocols_are_where_connections_py_expects() -> None:
    for name in ("httptools", "h11"):
        cls = uvicorn_protocol(name)
        assert issubclass(cls, asyncio.Protocol)
        for method in ("connection_made", "data_received", "eof_received", "connection_lost"):
            assert callable(getattr(cls, method))


def test_kept_alive_requests_pass(quick: LocalServer) -> None:
    with connect(quick) as sock:
        for pause in (0.0, 0.8, 0.1):  # an idle pause longer than the head time-out is not a slow head
            time.sleep(pause)
            sock.sendall(GET)
            assert read_response(sock).startswith(b"HTTP/1.1 200 ")


def test_an_unfinished_head_gets_408(quick: LocalServer) -> None:
    with connect(quick) as sock:
        t = time.monotonic()
        sock.sendall(b"GET /services/data/ HTTP/1.1\r\nHost: x\r\n")
        data = read_all(sock)
        assert data.startswith(b"HTTP/1.1 408 ") and b"REQUEST_TIMEOUT" in data
        assert 0.4 < time.monotonic() - t < 5


def test_a_trickled_head_gets_408(quick: LocalServer) -> None:
    """A byte every 0.1 s keeps uvicorn's idle timer from firing; the head clock does not restart."""
    with connect(quick) as sock:
        t = time.monotonic()
        try:
            for byte in GET[:-2]:
                sock.sendall(bytes([byte]))
                time.sleep(0.1)
        except OSError:
            pass  # closed by the server while trickling
        data = read_all(sock)
        assert data.startswith(b"HTTP/1.1 408 ") and time.monotonic() - t < 5


def test_a_silent_connection_is_closed(quick: LocalServer) -> None:
    with connect(quick) as sock:
        t = time.monotonic()
        assert read_all(sock) == b""  # closed, with nothing to answer
        assert 0.4 < time.monotonic() - t < 5


def test_a_slow_body_gets_408(quick: LocalServer) -> None:
    with connect(quick) as sock:
        sock.sendall(
            b"POST /services/data/v59.0/jobs/query HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n"
            b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"operation":'
        )
        data = read_all(sock)
        assert data.startswith(b"HTTP/1.1 408 ") and b"REQUEST_TIMEOUT" in data
        assert b"connection: close" in data.lower()


def test_oversized_heads(quick: LocalServer) -> None:
    # within what is read, Salesforce's rule: 414 for a long URI, 431 for a long URI + headers
    with connect(quick) as sock:
        sock.sendall(b"GET /services/data/?" + b"x" * 17_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(sock).startswith(b"HTTP/1.1 414 ")
    with connect(quick) as sock:
        sock.sendall(b"GET /services/data/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"y" * 17_000 + b"\r\n\r\n")
        assert read_response(sock).startswith(b"HTTP/1.1 431 ")
    # beyond, the connection is refused before the head ends
    with connect(quick) as sock:
        sock.sendall(b"GET /services/data/ HTTP/1.1\r\nX-Big: " + b"y" * 200_000)
        sock.shutdown(socket.SHUT_WR)
        data = read_all(sock)
        assert data.startswith(b"HTTP/1.1 431 ") and b"connection: close" in data.lower()


class _FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_extra_info(self, name: str, default: object = None) -> object:
        return {"peername": ("127.0.0.1", 5)}.get(name, default)


def test_writes_of_one_loop_step_go_out_as_one() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        fake = _FakeTransport()
        t = CoalescingTransport(fake, loop)
        t.write(b"HTTP/1.1 200 OK\r\n\r\n")
        t.write(memoryview(b"body"))
        assert fake.writes == []  # nothing is sent before the step ends
        await asyncio.sleep(0)
        assert fake.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
        t.writelines([b"a", b"b"])
        await asyncio.sleep(0)
        t.write(b"c")
        t.close()  # what is pending goes out before the close
        assert fake.writes[1:] == [b"ab", b"c"] and fake.closed
        await asyncio.sleep(0)
        assert len(fake.writes) == 3  # the scheduled flush finds nothing left
        assert t.get_extra_info("peername") == ("127.0.0.1", 5)

        other = _FakeTransport()
        dropped = CoalescingTransport(other, loop)
        dropped.write(b"x")
        dropped.abort()
        await asyncio.sleep(0)
        assert other.writes == [] and other.aborted

    asyncio.run(scenario())
