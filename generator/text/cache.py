"""The per-request response cache: SQLite, content-addressed, shared across runs.

A request's key is the SHA-256 of the canonical JSON of everything that decides its answer: the
endpoint, the model, the rendered messages, the response format (with its schema), the sampling
parameters (including the per-request seed) and the prompt template version. Never the API key, never
the source code. Every answer the endpoint gave is stored (even one that failed its checks), so a rerun
replays the same conversation and sends nothing.

Safe for threads and processes: WAL journal, a busy timeout, one connection per thread.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from schemas.errors import Terminal

CACHE_FORMAT = 1
DEFAULT_NAME = "llm.sqlite"


class CacheError(Terminal):
    """The cache file cannot be opened or written."""

    FIELDS: ClassVar[tuple[str, ...]] = ("path",)

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


def default_cache_path() -> Path:
    """`$ORGSEED_CACHE_DIR/llm.sqlite`, else `$XDG_CACHE_HOME/orgseed/llm.sqlite`, else ~/.cache/orgseed."""
    env = os.environ.get("ORGSEED_CACHE_DIR")
    if env:
        return Path(env).expanduser() / DEFAULT_NAME
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "orgseed" / DEFAULT_NAME


def request_key(payload: dict[str, Any]) -> str:
    """The content address of one request (see the module docstring for what `payload` holds)."""
    canonical = json.dumps(
        {"cache_format": CACHE_FORMAT, **payload}, sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    content: str | None
    refusal: str | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int


_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    kind TEXT NOT NULL,
    template TEXT NOT NULL,
    content TEXT,
    refusal TEXT,
    finish_reason TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
)
"""


class ResponseCache:
    """get/put by request key. One SQLite connection per thread; WAL so readers never block writers."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path).expanduser()
        self._local = threading.local()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = self._conn()
            conn.execute(_SCHEMA)
            conn.commit()
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(
                f"Cannot open the LLM cache at {self.path}: {exc}. Choose another file with --cache PATH "
                "(or ORGSEED_CACHE_DIR), or run with --no-cache.",
                path=str(self.path),
            ) from exc

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=True)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> CachedResponse | None:
        row = self._retry(
            lambda c: c.execute(
                "SELECT content, refusal, finish_reason, prompt_tokens, completion_tokens "
                "FROM responses WHERE key = ?",
                (key,),
            ).fetchone()
        )
        if row is None:
            return None
        return CachedResponse(row[0], row[1], row[2], int(row[3]), int(row[4]))

    def get_many(self, keys: list[str]) -> dict[str, CachedResponse]:
        """The cached answers among `keys` (one query per 500 keys)."""
        out: dict[str, CachedResponse] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._retry(
                lambda c, chunk=chunk, marks=marks: c.execute(
                    "SELECT key, content, refusal, finish_reason, prompt_tokens, completion_tokens "
                    f"FROM responses WHERE key IN ({marks})",
                    chunk,
                ).fetchall()
            )
            for row in rows:
                out[row[0]] = CachedResponse(row[1], row[2], row[3], int(row[4]), int(row[5]))
        return out

    def put(self, key: str, model: str, kind: str, template: str, response: CachedResponse) -> None:
        self.put_many([(key, model, kind, template, response)])

    def put_many(self, entries: list[tuple[str, str, str, str, CachedResponse]]) -> None:
        """Store answers in one transaction: (key, model, kind, template, response) each."""
        if not entries:
            return
        now = time.time()
        rows = [
            (
                key,
                model,
                kind,
                template,
                r.content,
                r.refusal,
                r.finish_reason,
                r.prompt_tokens,
                r.completion_tokens,
                now,
            )
            for key, model, kind, template, r in entries
        ]

        def write(c: sqlite3.Connection) -> None:
            c.execute("BEGIN IMMEDIATE")
            try:
                c.executemany(
                    "INSERT OR REPLACE INTO responses (key, model, kind, template, content, refusal, "
                    "finish_reason, prompt_tokens, completion_tokens, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise

        self._retry(write)

    def count(self) -> int:
        return int(self._retry(lambda c: c.execute("SELECT COUNT(*) FROM responses").fetchone())[0])

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _retry(self, op: Any) -> Any:
        """Run `op(conn)`, retrying a few times on `database is locked` beyond the busy timeout."""
        for attempt in range(5):
            try:
                return op(self._conn())
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise CacheError(
                        f"The LLM cache at {self.path} failed: {exc}.", path=str(self.path)
                    ) from exc
                if attempt == 4:
                    raise CacheError(
                        f"The LLM cache at {self.path} stayed locked: {exc}. Another process may hold it; "
                        "retry, or use another --cache file.",
                        path=str(self.path),
                    ) from exc
                time.sleep(0.1 * (attempt + 1))
        return None  # pragma: no cover
