"""SQL rows → records in Salesforce's REST shape, by a builder made once per record shape.

A record is `attributes {type, url}` and then the selected items in SELECT order: fields, nested parent
records (null when the lookup is empty) and nested child query results (null when there are none). The
builder fills every item in one C-level step (`dict.update` over `zip(keys, itemgetter(*cols)(row))`,
parents and children first holding a placeholder so that they keep their place) and then replaces the few
values that need work: booleans (SQLite's 0/1), parents and children. Records are the hot path of every
query; this is close to the speed of a dict display written out per shape, without generating code.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from orgs.local.soql.plan import ChildOut, FieldOut, Out, ParentOut, RecordShape

Row = tuple[Any, ...]
Record = dict[str, Any]
CACHE_SIZE = 1024


@dataclass
class ChildRows:
    """A page's children of one subquery, by lower-cased parent id, and how to shape them."""

    groups: dict[str, list[Row]]
    build: RecordBuilder


def _boolean(col: int) -> Callable[[Row], bool | None]:
    def value(r: Row) -> bool | None:
        v = r[col]
        return None if v is None else v != 0

    return value


def _parent(id_col: int, build: Callable[[Row], Record]) -> Callable[[Row], Record | None]:
    def value(r: Row) -> Record | None:
        return None if r[id_col] is None else build(r)

    return value


def _children(id_col: int, found: ChildRows | None, limit: int | None) -> Callable[[Row], Record | None]:
    """The nested query result of one parent's children (None when it has none)."""
    if found is None:  # the page has no children at all
        return lambda r: None
    groups, build = found.groups, found.build.many

    def value(r: Row) -> Record | None:
        rows = groups.get(str(r[id_col]).lower())
        if not rows:
            return None
        if limit is not None:
            rows = rows[:limit]
        records = build(rows)
        return {"totalSize": len(records), "done": True, "records": records}

    return value


def _getter(cols: list[int]) -> Callable[[Row], tuple[Any, ...]]:
    if len(cols) == 1:
        col = cols[0]
        return lambda r: (r[col],)
    return itemgetter(*cols)


class RecordBuilder:
    """Builds the records of one shape: `one(row)`, or `many(rows)` for a page (one loop, no call per row)."""

    __slots__ = ("fields", "fixups", "get", "id_col", "sobject", "url")

    def __init__(
        self, items: tuple[Out, ...], sobject: str, id_col: int, base: str, children: dict[str, ChildRows]
    ) -> None:
        self.sobject = sobject
        self.id_col = id_col
        self.url = base + sobject + "/"
        keys: list[str] = []
        cols: list[int] = []
        fixups: list[tuple[str, Callable[[Row], Any]]] = []
        for it in items:
            keys.append(it.key)
            if isinstance(it, FieldOut):
                cols.append(it.col)
                if it.boolean:
                    fixups.append((it.key, _boolean(it.col)))
            elif isinstance(it, ParentOut):
                cols.append(it.id_col)  # placeholder, replaced by the fixup
                parent = RecordBuilder(it.items, it.sobject, it.id_col, base, {})
                fixups.append((it.key, _parent(it.id_col, parent.one)))
            else:
                cols.append(id_col)  # placeholder, replaced by the fixup
                fixups.append((it.key, _children(id_col, children.get(it.key), it.plan.limit)))
        self.fields = tuple(keys)
        self.get = _getter(cols)
        self.fixups = tuple(fixups)

    def one(self, r: Row) -> Record:
        rec: Record = {"attributes": {"type": self.sobject, "url": self.url + r[self.id_col]}}
        rec.update(zip(self.fields, self.get(r), strict=False))  # same length by construction
        for key, value in self.fixups:
            rec[key] = value(r)
        return rec

    def many(self, rows: list[Row]) -> list[Record]:
        sobject, url, id_col, fields, get, fixups = (
            self.sobject,
            self.url,
            self.id_col,
            self.fields,
            self.get,
            self.fixups,
        )
        out: list[Record] = []
        append = out.append
        for r in rows:
            rec: Record = {"attributes": {"type": sobject, "url": url + r[id_col]}}
            rec.update(zip(fields, get(r), strict=False))
            for key, value in fixups:
                rec[key] = value(r)
            append(rec)
        return out


class Builders:
    """Builders by record shape (and API version), the most recent `size` kept. Thread-safe."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._cache: OrderedDict[tuple[int, str], tuple[RecordShape, RecordBuilder]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, shape: RecordShape, base: str, children: dict[str, ChildRows]) -> RecordBuilder:
        """The builder of `shape`'s records; cached when the shape has no subqueries (a builder with
        subqueries holds the page's child rows, so it is made per page)."""
        if any(isinstance(it, ChildOut) for it in shape.items):
            return RecordBuilder(shape.items, shape.sobject, shape.id_col, base, children)
        key = (id(shape), base)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] is shape:
                self._cache.move_to_end(key)
                return hit[1]
        build = RecordBuilder(shape.items, shape.sobject, shape.id_col, base, {})
        with self._lock:
            self._cache[key] = (shape, build)
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return build
