"""What the served org allows: sizes, time-outs and memory budgets, in one immutable object.

`ServeLimits()` holds the defaults `orgseed serve` uses; a `LocalServer` (and the `LocalOrg` behind it)
takes one, so a test or an embedding program can tighten a limit without touching a module global.
Where Salesforce documents a limit, the default is Salesforce's (the SOQL/SOSL ones are constants of the
query languages and live with their compilers: `soql/limits.py`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServeLimits:
    # -- requests
    # Salesforce: "the maximum length for the combined URI and headers is 16,384 bytes": a longer request
    # gets 431, or 414 when the URI alone is longer. (A request head is read at most four times this long
    # before the connection is refused: connections.py.)
    max_head_bytes: int = 16_384
    # request bodies: JSON (Bulk job definitions, and whatever a later router accepts), the SOAP login, and
    # Bulk API 2.0 ingest uploads (Salesforce: 150 MB per upload)
    max_body_bytes: int = 16 * 1024 * 1024
    max_login_bytes: int = 64 * 1024
    max_upload_bytes: int = 150 * 1000 * 1000
    # a request's headers must arrive within this many seconds of its first byte (or of the connection
    # opening), and its body within `body_timeout` of the headers; slower requests are answered 408 and
    # their connection is closed
    header_timeout: float = 10.0
    body_timeout: float = 60.0
    # idle time between two requests on a kept-alive connection
    keep_alive_timeout: int = 75

    # -- queries
    # SOQL and SOSL run in a pool of worker threads (SQLite releases the GIL while it works), so a heavy
    # query does not hold up light ones; a query still running after `query_timeout` seconds is stopped
    # and answered QUERY_TIMEOUT (Salesforce stops REST queries after 120 s)
    workers: int = 8
    query_timeout: float = 120.0
    # open query cursors (the rows behind `nextRecordsUrl`): Salesforce forgets a cursor after 15 minutes
    # unused; here the oldest are also forgotten beyond `max_cursors` cursors or `max_cursor_bytes` held
    max_cursors: int = 64
    max_cursor_bytes: int = 256 * 1024 * 1024
    cursor_ttl: float = 15 * 60.0
    # Bulk API 2.0 query jobs keep their results (as CSV) until deleted, unread for `bulk_ttl` seconds, or
    # pushed out (the oldest first) beyond `max_bulk_jobs` jobs or `max_bulk_bytes` of results
    max_bulk_jobs: int = 100
    max_bulk_bytes: int = 512 * 1024 * 1024
    bulk_ttl: float = 60 * 60.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not value > 0:
                raise ValueError(f"ServeLimits.{name} must be positive (got {value!r}).")


DEFAULT_LIMITS = ServeLimits()
