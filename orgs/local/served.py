"""The bundle a server serves, followed on disk: when it changes, the org is reloaded (or refused).

A rebuild swaps a new bundle folder in by rename, so the served path may name a different directory from
one request to the next, and a bundle edited in place gets a new manifest. Before each call the server
compares the manifest the served path names now (its device, inode, size and modification time: one
`stat` call; a folder renamed in brings another manifest file) with the one it loaded; when they differ
it reads the manifest:

- the same data (`data_sha256`) in the same folder: nothing to do;
- a complete bundle with other data, or another folder: a new `LocalOrg` is opened (its `org.sqlite`
  built if need be) and served from then on; query cursors and Bulk jobs of the old data are forgotten;
- a bundle that is missing, unreadable or not complete (its manifest's `status`): every call is refused
  with 503 SERVER_UNAVAILABLE saying why and what to do, until the bundle changes again.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from datetime import date

from orgs.bundle import Bundle
from orgs.local.bulk import BulkQueries
from orgs.local.engine import LocalOrg
from orgs.local.errors import OrgApiError
from orgs.local.limits import ServeLimits

Signature = tuple[int, int, int, int] | None


def signature(root: str) -> Signature:
    """The identity of the manifest at `root` as the file system names it now (None: none readable). A
    folder renamed over `root` brings another manifest file, so one stat tells both kinds of change."""
    try:
        manifest = os.stat(os.path.join(root, "manifest.json"))
    except OSError:
        return None
    return (manifest.st_dev, manifest.st_ino, manifest.st_size, manifest.st_mtime_ns)


def folder_identity(root: str) -> tuple[int, int] | None:
    try:
        folder = os.stat(root)
    except OSError:
        return None
    return folder.st_dev, folder.st_ino


class Unavailable(OrgApiError):
    status = 503
    default_code = "SERVER_UNAVAILABLE"


@dataclass(frozen=True)
class Served:
    """One loaded bundle: the org and its Bulk API 2.0 query jobs."""

    org: LocalOrg
    bulk: BulkQueries


class FixedServed:
    """The org served for an empty org's state directory (`orgs/local/writable`): always the same org, which
    changes through its own writes, never by files changing on disk."""

    def __init__(self, org: LocalOrg, *, owned: bool) -> None:
        self.current = Served(org, BulkQueries(org))
        self.reloads = 0
        self.refusal: Unavailable | None = None
        self._owned = [org] if owned else []

    def changed(self) -> bool:
        return False

    def get(self, checked: bool = False) -> Served:
        return self.current

    def close(self) -> None:
        for org in self._owned:
            org.close()
        self._owned.clear()


class ServedBundle:
    """The org served for a bundle path, reloaded when the bundle there changes. Thread-safe."""

    def __init__(self, org: LocalOrg, *, today: date | None, limits: ServeLimits, owned: bool) -> None:
        self.root = org.bundle.root
        self._root = str(self.root)
        self.today = today  # None: each load takes the bundle's own default
        self.limits = limits
        self.current = Served(org, BulkQueries(org))
        self.loaded = signature(self._root)
        self.folder = folder_identity(self._root)
        self.refusal: Unavailable | None = None
        self.refused_at: Signature = None
        self.reloads = 0
        self._owned = [org] if owned else []
        self._lock = threading.Lock()

    def changed(self) -> bool:
        """Does the bundle on disk differ from the one served (or refused)? Cheap: one stat."""
        now = signature(self._root)
        return now != (self.refused_at if self.refusal is not None else self.loaded)

    def get(self, checked: bool = False) -> Served:
        """The served org, once any change on disk has been taken in (reloading can take seconds: call
        it off the event loop when `changed()`; `checked`: the caller just found nothing changed). Raises
        Unavailable while the bundle is refused."""
        if not checked and self.changed():
            with self._lock:
                if self.changed():
                    self._reload()
        if self.refusal is not None:
            raise self.refusal
        return self.current

    def _reload(self) -> None:
        now = signature(self._root)
        old = self.current.org
        try:
            manifest = Bundle(self.root).read_manifest()
        except Exception as exc:  # the bundle was removed or damaged: say so on every call
            self._refuse(now, f"its manifest cannot be read ({exc})")
            return
        status = manifest.get("status", "complete")
        if status != "complete":
            self._refuse(now, f"its manifest says status {status!r}, not 'complete'")
            return
        folder = folder_identity(self._root)
        if folder == self.folder and manifest.get("data_sha256") == old.manifest.get("data_sha256"):
            self.loaded, self.refusal, self.refused_at = now, None, None
            return
        try:
            org = LocalOrg(self.root, today=self.today, model=None, limits=self.limits)
        except Exception as exc:
            self._refuse(now, f"it cannot be opened ({type(exc).__name__}: {exc})")
            return
        # the old org is dropped, not closed: calls still running on it finish (its connections close when
        # it is collected)
        self._owned = [org]
        self.current = Served(org, BulkQueries(org))
        self.loaded, self.folder, self.refusal, self.refused_at = now, folder, None, None
        self.reloads += 1

    def _refuse(self, now: Signature, why: str) -> None:
        self.refusal = Unavailable(
            f"The bundle at {self.root} changed on disk and {why}. The local org serves nothing until it "
            "is a complete bundle again: wait for the build to finish (or rebuild it); the server picks "
            "it up by itself."
        )
        self.refused_at = now

    def close(self) -> None:
        """Close the orgs this object opened (or was given to own)."""
        for org in self._owned:
            org.close()
        self._owned.clear()
