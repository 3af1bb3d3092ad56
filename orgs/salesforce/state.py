"""The local state of uploads to one org: `BUNDLE/uploads/<org id>/id_map.csv`, bundle ids -> org ids.

The file (columns `object,bundle_id,org_id`, the exact layout the audit reads) is created atomically with its
header, then only appended to, each batch flushed and fsynced before the load goes on, so a kill at any point
loses at most the rows of the batch being written, and never a row the org has acknowledged and we recorded.
A kill in the middle of a write leaves at most one torn last line (no newline): reading drops it and the
next append truncates it off, so the file is always a header plus whole rows. `uploads/` is outside the
bundle's hashed files: nothing here changes `data_sha256`.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterable
from pathlib import Path

from orgs.bundle import csv_text
from schemas.errors import DataFindings, UsageError

HEADER = ("object", "bundle_id", "org_id")
_ORG_ID = re.compile(r"[A-Za-z0-9]{1,18}")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


class StateError(DataFindings):
    """The id map of an org is damaged (names the file and line)."""


def upload_dir(bundle: Path | str, org_id: str) -> Path:
    """`BUNDLE/uploads/<org id>/` (the org id checked: it becomes a folder name)."""
    if not _ORG_ID.fullmatch(org_id):
        raise UsageError(f"Org id {org_id!r} is not a Salesforce id (1-18 letters and digits).")
    return Path(bundle) / "uploads" / org_id


def atomic_write(path: Path, data: bytes) -> None:
    """Write `path` whole or not at all (a temporary file in the same folder, fsynced, renamed over)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _row_bytes(rows: Iterable[tuple[str, str, str]]) -> bytes:
    return csv_text(rows).encode("utf-8")


class IdMap:
    """Bundle id -> org id per object for one org, persisted as `id_map.csv`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._ids: dict[tuple[str, str], str] = {}
        self._good_size = 0  # bytes of header + whole rows; anything after is a torn line
        if self.path.exists():
            self._load()

    @classmethod
    def for_org(cls, bundle: Path | str, org_id: str) -> IdMap:
        return cls(upload_dir(bundle, org_id) / "id_map.csv")

    # -- reading ----------------------------------------------------------------------------------------------

    def _load(self) -> None:
        data = self.path.read_bytes()
        whole = data[: data.rfind(b"\n") + 1]  # drop a torn last line (a kill mid-write)
        self._good_size = len(whole)
        try:
            text = whole.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StateError(
                f"{self.path}: not UTF-8 at byte {exc.start}; this file is orgseed's own state: restore it or "
                "run `orgseed teardown` and upload again.",
                file=str(self.path),
            ) from None
        reader = csv.reader(io.StringIO(text, newline=""))
        for index, row in enumerate(reader):
            line = reader.line_num
            if index == 0:
                if tuple(row) != HEADER:
                    raise StateError(
                        f"{self.path}:1: header {','.join(row)!r}, expected {','.join(HEADER)!r}; this is not "
                        "an orgseed id map (move it away).",
                        file=str(self.path),
                        line=1,
                    )
                continue
            if len(row) != 3 or not all(row) or not _NAME.fullmatch(row[0]):
                raise StateError(
                    f"{self.path}:{line}: expected object,bundle_id,org_id (got {row!r}); restore the file or "
                    "run `orgseed teardown` and upload again.",
                    file=str(self.path),
                    line=line,
                )
            key = (row[0], row[1])
            known = self._ids.get(key)
            if known is not None and known != row[2]:
                raise StateError(
                    f"{self.path}:{line}: {row[0]} {row[1]} maps to {row[2]} here but to {known} earlier: two "
                    "org records for one bundle record. Run `orgseed teardown` to remove both, then upload again.",
                    file=str(self.path),
                    line=line,
                    sobject=row[0],
                )
            self._ids[key] = row[2]
        if self._good_size == 0 and data:
            raise StateError(f"{self.path}: no complete header line.", file=str(self.path), line=1)

    def get(self, sobject: str, bundle_id: str) -> str | None:
        return self._ids.get((sobject, bundle_id))

    def ids(self, sobject: str) -> dict[str, str]:
        """bundle id -> org id of `sobject`."""
        return {b: o for (s, b), o in self._ids.items() if s == sobject}

    def objects(self) -> list[str]:
        return sorted({s for s, _ in self._ids})

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, key: object) -> bool:
        return key in self._ids

    # -- writing ----------------------------------------------------------------------------------------------

    def record(self, sobject: str, pairs: Iterable[tuple[str, str]]) -> int:
        """Append `(bundle_id, org_id)` pairs of `sobject` (already-known identical pairs skipped), fsynced
        before returning. Returns how many rows were written. A bundle id already mapped to another org id is
        an error: it would mean a duplicate in the org."""
        if not _NAME.fullmatch(sobject):
            raise UsageError(f"Object name {sobject!r} is not an sObject API name.")
        new: dict[str, str] = {}
        for bundle_id, org_id in pairs:
            if not bundle_id or not org_id or any(c in bundle_id + org_id for c in "\r\n"):
                raise UsageError(
                    f"{sobject}: empty or multi-line id in ({bundle_id!r}, {org_id!r}).", sobject=sobject
                )
            known = self._ids.get((sobject, bundle_id), new.get(bundle_id))
            if known is None:
                new[bundle_id] = org_id
            elif known != org_id:
                raise StateError(
                    f"{sobject} {bundle_id} is already uploaded as {known}, now again as {org_id}: a duplicate "
                    f"in the org. Delete {org_id} (or run `orgseed teardown`).",
                    file=str(self.path),
                    sobject=sobject,
                )
        if not new:
            return 0
        data = _row_bytes((sobject, b, o) for b, o in new.items())
        if not self.path.exists():
            atomic_write(self.path, _row_bytes([HEADER]))
            self._good_size = self.path.stat().st_size
        with open(self.path, "r+b") as f:
            f.truncate(self._good_size)  # a torn line left by a kill
            f.seek(self._good_size)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        self._good_size += len(data)
        for b, o in new.items():
            self._ids[(sobject, b)] = o
        return len(new)
