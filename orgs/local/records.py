"""SQL rows → records in Salesforce's REST shape, by a builder made once per record shape.

A record is `attributes {type, url}` and then the selected items in SELECT order: fields, nested parent
records (null when the lookup is empty) and nested child query results (null when there are none). The
builder fills every item in one C-level step (`dict.update` over `zip(keys, itemgetter(*cols)(row))`,
parents and children first holding a placeholder so that they keep their place) and then replaces the few
values that need work: booleans (SQLite's 0/1), parents and children. Records are the hot path of every
query; this is close to the speed of a dict display written out per shape, without generating code.

The REST query routes skip the dicts where they can: `JsonRecords` writes a page of a plain shape (fields
only, no booleans; or AggregateResult rows) as JSON text straight from the rows, column by column, the
exact bytes orjson writes for the builder's records (tests/orgs/local/test_json_records.py), about a third
of the CPU (0.56 against 1.63 ms for a 2,000-record CaseHistory__c page). A page holding a value it does not
write verbatim (a number, text orjson escapes) is built by the builder instead.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import orjson

from orgs.local.soql.plan import AggColumn, ChildOut, FieldOut, Out, ParentOut, RecordShape

Row = tuple[Any, ...]
Record = dict[str, Any]
CACHE_SIZE = 1024
# what orjson writes other than as itself inside a JSON string (escaped: quote, backslash, C0 controls;
# refused: lone surrogates); a page holding any of these is encoded by the dict path
_NOT_VERBATIM = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')
_NONE = type(None)
_STRINGS_OR_NULL = frozenset({str, _NONE})


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


def _verbatim(text: str) -> bool:
    """Whether orjson writes `text` inside a JSON string as itself (no escape, no refusal)."""
    return '"' not in text and "\\" not in text and (text.isprintable() or not _NOT_VERBATIM.search(text))


class JsonRecords:
    """Records of a plain shape (fields only, no booleans) written as JSON text straight from the SQL rows,
    column by column: each column's values joined between the literal pieces of the record (attributes,
    keys, quotes) in one `str.join`, no dict and no Python call per record. The text is exactly orjson's for
    the dict path's records, or None for a page this path does not write (a value that is neither text nor
    null, or text orjson would escape or refuse): the caller then builds that page by the dict path."""

    __slots__ = ("cols", "lits", "url")

    def __init__(self, head: str, url_col: int | None, items: Sequence[tuple[str, int]]) -> None:
        """`head`: the record's JSON text up to its `attributes` url's id (with `url_col`, the SQL column of
        that id, written verbatim inside the url) or up to its attributes' last value (no `url_col`);
        `items`: (key, SQL column) of each value, in output order (at least one)."""
        keys = [orjson.dumps(k).decode() + ":" for k, _ in items]
        self.url = url_col is not None
        self.cols = ([url_col] if url_col is not None else []) + [c for _, c in items]
        if self.url:  # the id, then the url's and the attributes' ends
            lits = ["," + head, '"},' + keys[0]]
        else:
            lits = ["," + head + "}," + keys[0]]
        self.lits = (*lits, *("," + k for k in keys[1:]), "}")

    @classmethod
    def for_shape(
        cls, shape_items: tuple[Out, ...], sobject: str, id_col: int, url: str
    ) -> JsonRecords | None:
        fields = [it for it in shape_items if isinstance(it, FieldOut) and not it.boolean]
        if not fields or len(fields) != len(shape_items):
            return None
        attributes = orjson.dumps({"type": sobject, "url": url}).decode()[:-2]  # ...,"url":"<url> (open)
        return cls('{"attributes":' + attributes, id_col, [(it.key, it.col) for it in fields])

    @classmethod
    def for_aggregate(cls, columns: tuple[AggColumn, ...]) -> JsonRecords | None:
        if not columns or any(c.boolean for c in columns):
            return None
        return cls('{"attributes":{"type":"AggregateResult"', None, [(c.key, c.col) for c in columns])

    def encode(self, rows: list[Row]) -> str | None:
        """The page's records as JSON text, comma-separated (no brackets), or None (see the class)."""
        if not rows:
            return ""
        table = list(zip(*rows, strict=True))
        lits = list(self.lits)
        columns: list[Sequence[str]] = []
        for i, c in enumerate(self.cols):
            column: Sequence[Any] = table[c]
            try:
                text = "".join(column)
            except TypeError:  # a null, or a value that is not text
                if (i == 0 and self.url) or not set(map(type, column)) <= _STRINGS_OR_NULL:
                    return None
                if not _verbatim("".join(filter(None, column))):
                    return None
                columns.append(["null" if v is None else '"' + v + '"' for v in column])
                continue
            if not _verbatim(text):
                return None
            if i > 0 or not self.url:  # a string value: quoted (the id is inside the url's string)
                lits[i] += '"'
                lits[i + 1] = '"' + lits[i + 1]
            columns.append(column)
        pieces: list[Any] = []
        for lit, values in zip(lits, columns, strict=False):
            pieces += (repeat(lit), values)
        pieces.append(repeat(lits[-1]))
        return "".join(chain.from_iterable(zip(*pieces, strict=False)))[1:]  # repeats: endless


class RecordBuilder:
    """Builds the records of one shape: `one(row)`, or `many(rows)` for a page (one loop, no call per row)."""

    __slots__ = ("fields", "fixups", "get", "id_col", "json", "sobject", "url")

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
        self.json = JsonRecords.for_shape(items, sobject, id_col, self.url)

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
        self._json: OrderedDict[tuple[int, str], tuple[tuple[AggColumn, ...], JsonRecords | None]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def aggregate(self, columns: tuple[AggColumn, ...]) -> JsonRecords | None:
        """The JSON writer of AggregateResult records with these columns (None: the dict path only)."""
        key = (id(columns), "\x00aggregate")
        with self._lock:
            hit = self._json.get(key)
            if hit is not None and hit[0] is columns:
                self._json.move_to_end(key)
                return hit[1]
        found = JsonRecords.for_aggregate(columns)
        with self._lock:
            self._json[key] = (columns, found)
            while len(self._json) > self.size:
                self._json.popitem(last=False)
        return found

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
