"""The corruption corpus: each `tests/fixtures/corruptions/*.json` file corrupts a copy of the small bundle
and says exactly which findings the validator must report.

A corruption file holds:

- `select`: named records, resolved in order. `{"object": "Case", "where": {...}, "latent_where": {...},
  "nth": 0}` picks the nth record of `data/Case.csv` (`"latent": true`: of `latent/Case.csv`) whose cells
  meet `where` and whose latent row meets `latent_where`. A condition is a literal (equal), `null` (empty),
  `{"not": c}`, `{"same_as": "sel.Field"}`, `{"not_same_as": "sel.Field"}`, `{"contains": "text"}`, or
  `{"in": sub}` / `{"not_in": sub}` where `sub` is a selection with a `field`, standing for the set of that
  field's values over all matching records.
- `edits`, applied in order: `set` (a field of a selected record; `"latent": true` edits its latent row),
  `delete`, `delete_where`, `duplicate`, `json_set` (a JSON file by pointer), `remove_file`, and raw CSV
  damage applied when the file is written: `truncate_row`, `unclosed_quote`, `rename_column`,
  `truncate_file`. A value is a literal, `null`, or `{"from": "sel.Field"}` / `{"phrase_of": "sel.Field"}`
  / `{"repeat": "x", "times": n}` followed by transforms: `shift_seconds`, `shift_days`, `as_date`, `slice`,
  `upper`, `replace` (`[old, new]`, each a value; the old text must occur), `append`.
- `rehash` (default true): whether the manifest's SHA-256 of each changed file is updated.
- `expect`: every finding the corrupted bundle must produce beyond the clean bundle's, each fully located:
  `rule`, `object`, `record` (`"sel"` = the selected record's Id, `"sel.Field"` = a cell of it, or null),
  `field`, `line` (`"sel"` = the selected record's line in its file after the edits, `"any"`, or null),
  optionally `file`, `pointer`, `related` and `latent` (the record's line is in its latent file). `each`
  (a selection) expands the expectation to every matching record of the corrupted bundle.

Expected ids and lines are read from the corrupted CSVs here, independently of the validator.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from orgs.bundle import sha256_file

SF_DATETIME = "%Y-%m-%dT%H:%M:%S.000+0000"


class CorpusError(Exception):
    """The corruption file cannot be applied as written (a selector matched nothing, a text did not occur)."""


@dataclass
class Table:
    header: list[str]
    rows: list[dict[str, str]]
    dirty: bool = False
    damage: dict[int, str] = field(default_factory=dict)  # id(row) -> raw damage kind
    renamed: dict[str, str] = field(default_factory=dict)

    def serialize(self) -> tuple[str, dict[int, int]]:
        """The CSV text and the line each row starts on (keyed by id(row))."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([self.renamed.get(h, h) for h in self.header])
        lines: dict[int, int] = {}
        line = 2
        for row in self.rows:
            cells = [row[h] for h in self.header]
            damage = self.damage.get(id(row))
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerow(cells)
            text = buf.getvalue()
            if damage == "truncate_row":
                text = (
                    ",".join(c.replace("\n", " ").replace(",", " ").replace('"', "") for c in cells[:3])
                    + "\n"
                )
            elif damage == "unclosed_quote":
                text = '"' + text.replace('"', "")
            lines[id(row)] = line
            line += text.count("\n")
            out.write(text)
        return out.getvalue(), lines


@dataclass
class Ref:
    rel: str
    row: dict[str, str]


class Corruption:
    def __init__(self, spec: dict[str, Any], root: Path) -> None:
        self.spec = spec
        self.root = root
        self.tables: dict[str, Table] = {}
        self.json: dict[str, Any] = {}
        self.json_dirty: set[str] = set()
        self.removed: set[str] = set()
        self.raw_damage: dict[str, int] = {}
        self.refs: dict[str, Ref] = {}
        self._values: dict[str, set[str]] = {}  # subquery results, cleared after every edit
        self._latent: dict[str, dict[str, dict[str, str]]] = {}  # latent rows by Id

    # -- reading ---------------------------------------------------------------------------------------

    def table(self, rel: str) -> Table:
        if rel not in self.tables:
            text = (self.root / rel).read_text(encoding="utf-8")
            reader = csv.reader(io.StringIO(text, newline=""))
            header = next(reader)
            table = Table(header, [dict(zip(header, r, strict=True)) for r in reader])
            if table.serialize()[0] != text:
                raise CorpusError(f"{rel} does not round-trip through csv.writer; the harness cannot edit it")
            self.tables[rel] = table
        return self.tables[rel]

    def latent_row(self, sobject: str, rid: str) -> dict[str, str] | None:
        rel = f"latent/{sobject}.csv"
        if not (self.root / rel).exists():
            return None
        if rel not in self._latent:
            self._latent[rel] = {r["Id"]: r for r in self.table(rel).rows}
        return self._latent[rel].get(rid)

    def cell(self, ref_field: str) -> str:
        name, _, fname = ref_field.partition(".")
        ref = self.refs[name]
        if fname == "":
            return ref.row["Id"]
        if fname in ref.row:
            return ref.row[fname]
        sobject = Path(ref.rel).stem
        latent = self.latent_row(sobject, ref.row["Id"])
        if latent is None or fname not in latent:
            raise CorpusError(f"`{ref_field}`: no field `{fname}` in {ref.rel} or its latent file")
        return latent[fname]

    # -- selecting ---------------------------------------------------------------------------------------

    @staticmethod
    def rel_of(spec: dict[str, Any]) -> str:
        return f"{'latent' if spec.get('latent') else 'data'}/{spec['object']}.csv"

    def matches(self, spec: dict[str, Any]) -> list[dict[str, str]]:
        table = self.table(self.rel_of(spec))
        out = []
        for row in table.rows:
            if all(self.holds(row.get(f, ""), c) for f, c in spec.get("where", {}).items()):
                latent_where = spec.get("latent_where")
                if latent_where:
                    latent = self.latent_row(spec["object"], row["Id"]) or {}
                    if not all(self.holds(latent.get(f, ""), c) for f, c in latent_where.items()):
                        continue
                out.append(row)
        return out

    def holds(self, value: str, cond: Any) -> bool:
        if cond is None:
            return value == ""
        if isinstance(cond, str):
            return value == cond
        ((op, arg),) = cond.items()
        if op == "not":
            return not self.holds(value, arg)
        if op == "same_as":
            return value == self.cell(arg)
        if op == "not_same_as":
            return value != self.cell(arg)
        if op == "contains":
            return arg in value
        if op in ("in", "not_in"):
            key = json.dumps(arg, sort_keys=True)
            if key not in self._values:
                self._values[key] = {r.get(arg["field"], "") for r in self.matches(arg)}
            return (value in self._values[key]) == (op == "in")
        raise CorpusError(f"unknown condition `{op}`")

    def select(self) -> None:
        for name, spec in self.spec.get("select", {}).items():
            rows = self.matches(spec)
            nth = spec.get("nth", 0)
            if not rows or not -len(rows) <= nth < len(rows):
                raise CorpusError(f"selection `{name}` matched {len(rows)} record(s); cannot take #{nth}")
            self.refs[name] = Ref(self.rel_of(spec), rows[nth])

    # -- values and edits ------------------------------------------------------------------------------------

    def value(self, spec: Any) -> str:
        if spec is None:
            return ""
        if isinstance(spec, str):
            return spec
        if "from" in spec:
            text = self.cell(spec["from"])
        elif "phrase_of" in spec:
            remedy = self.cell(spec["phrase_of"])
            text = self.load_json("latent/world/policies.json")["remedies"][remedy]["phrase"]
        elif "repeat" in spec:
            text = spec["repeat"] * spec["times"]
        else:
            raise CorpusError(f"unknown value {spec}")
        if "shift_seconds" in spec:
            text = (datetime.strptime(text, SF_DATETIME) + timedelta(seconds=spec["shift_seconds"])).strftime(
                SF_DATETIME
            )
        if "shift_days" in spec:
            fmt = SF_DATETIME if "T" in text else "%Y-%m-%d"
            text = (datetime.strptime(text, fmt) + timedelta(days=spec["shift_days"])).strftime(fmt)
        if spec.get("as_date"):
            text = text[:10]
        if "slice" in spec:
            text = text[: spec["slice"]]
        if spec.get("upper"):
            text = text.upper()
        if "replace" in spec:
            old, new = (self.value(v) for v in spec["replace"])
            if old not in text:
                raise CorpusError(f"`{old}` does not occur in {text[:80]!r}")
            text = text.replace(old, new)
        if "append" in spec:
            text += spec["append"]
        return text

    def target(self, edit: dict[str, Any]) -> tuple[Table, dict[str, str]]:
        ref = self.refs[edit["sel"]]
        if edit.get("latent"):
            sobject = Path(ref.rel).stem
            table = self.table(f"latent/{sobject}.csv")
            row = next((r for r in table.rows if r["Id"] == ref.row["Id"]), None)
            if row is None:
                raise CorpusError(f"no latent row for {ref.row['Id']}")
            return table, row
        return self.table(ref.rel), ref.row

    def load_json(self, rel: str) -> Any:
        if rel not in self.json:
            self.json[rel] = json.loads((self.root / rel).read_text(encoding="utf-8"))
        return self.json[rel]

    def apply(self) -> None:
        for edit in self.spec.get("edits", []):
            self._values.clear()
            self._latent.clear()
            op = edit["op"]
            if op == "set":
                table, row = self.target(edit)
                if edit["field"] not in row:
                    raise CorpusError(f"no field `{edit['field']}`")
                row[edit["field"]] = self.value(edit["value"])
                table.dirty = True
            elif op == "delete":
                table, row = self.target(edit)
                table.rows.remove(row)
                table.dirty = True
            elif op == "delete_where":
                table = self.table(self.rel_of(edit))
                doomed = {id(r) for r in self.matches(edit)}
                if not doomed:
                    raise CorpusError("delete_where matched nothing")
                table.rows = [r for r in table.rows if id(r) not in doomed]
                table.dirty = True
            elif op == "duplicate":
                table, row = self.target(edit)
                copy = dict(row)
                for fname, value in edit.get("set", {}).items():
                    copy[fname] = self.value(value)
                table.rows.append(copy)
                table.dirty = True
                if "as" in edit:
                    self.refs[edit["as"]] = Ref(self.refs[edit["sel"]].rel, copy)
            elif op in ("truncate_row", "unclosed_quote"):
                table, row = self.target(edit)
                table.damage[id(row)] = op
                table.dirty = True
            elif op == "rename_column":
                table = self.table(f"data/{edit['object']}.csv")
                table.renamed[edit["field"]] = edit["to"]
                table.dirty = True
            elif op == "json_set":
                doc = self.load_json(edit["file"])
                *parents, last = edit["pointer"].strip("/").split("/")
                for p in parents:
                    doc = doc[p]
                doc[last] = edit["value"]
                self.json_dirty.add(edit["file"])
            elif op == "remove_file":
                self.removed.add(edit["file"])
            elif op == "truncate_file":
                self.raw_damage[edit["file"]] = edit["keep"]
            else:
                raise CorpusError(f"unknown edit `{op}`")

    # -- writing -----------------------------------------------------------------------------------------------

    def write(self) -> None:
        changed = []
        for rel, table in self.tables.items():
            if table.dirty:
                (self.root / rel).write_text(table.serialize()[0], encoding="utf-8")
                changed.append(rel)
        for rel in self.json_dirty:
            if rel != "manifest.json":
                (self.root / rel).write_text(json.dumps(self.json[rel], indent=2) + "\n", encoding="utf-8")
                changed.append(rel)
        for rel, keep in self.raw_damage.items():
            path = self.root / rel
            path.write_bytes(path.read_bytes()[:keep])
            changed.append(rel)
        manifest_path = self.root / "manifest.json"
        manifest = self.json.get("manifest.json") or json.loads(manifest_path.read_text(encoding="utf-8"))
        if self.spec.get("rehash", True):
            for rel in changed:
                manifest["files"][rel] = sha256_file(self.root / rel)
        manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        for rel in self.removed:
            (self.root / rel).unlink()

    # -- expectations ----------------------------------------------------------------------------------------

    def line_of(self, ref: Ref) -> int:
        table = self.tables.get(ref.rel) or self.table(ref.rel)
        return table.serialize()[1][id(ref.row)]

    def expected(self) -> list[dict[str, Any]]:
        self._values.clear()
        self._latent.clear()
        out = []
        for exp in self.spec["expect"]:
            if "each" in exp:
                spec = exp["each"]
                rows = self.matches(spec)
                if not rows:
                    raise CorpusError(f"`each` of {exp['rule']} matched nothing")
                for row in rows:
                    ref = Ref(self.rel_of(spec), row)
                    self.refs["$each"] = ref
                    out.append(self.resolve({**exp, "record": "$each", "line": "$each"}, "$each"))
            else:
                out.append(self.resolve(exp, None))
        return out

    def resolve(self, exp: dict[str, Any], _each: str | None) -> dict[str, Any]:
        obj = exp.get("object")
        record = exp.get("record")
        if isinstance(record, str) and (record.split(".")[0] in self.refs):
            record = self.cell(record)
        line = exp.get("line")
        if isinstance(line, str) and line in self.refs:
            ref = self.refs[line]
            if exp.get("latent"):
                latent_rel = f"latent/{Path(ref.rel).stem}.csv"
                row = next(r for r in self.table(latent_rel).rows if r["Id"] == ref.row["Id"])
                ref = Ref(latent_rel, row)
            line = self.line_of(ref)
        file = exp.get("file")
        if file is None and obj is not None:
            file = f"{'latent' if exp.get('latent') else 'data'}/{obj}.csv"
        related = exp.get("related")
        if isinstance(related, str) and related in self.refs:
            related = [self.cell(related)]
        return {
            "rule": exp["rule"],
            "object": obj,
            "record": record,
            "field": exp.get("field"),
            "file": file,
            "line": line,
            "pointer": exp.get("pointer"),
            "related": related,
        }


def matches(expected: dict[str, Any], found: dict[str, Any]) -> bool:
    for key in ("rule", "object", "record", "field", "file", "line", "pointer"):
        want = expected[key]
        if key == "line" and want == "any":
            continue
        if found.get(key) != want:
            return False
    return expected["related"] is None or found.get("related") == expected["related"]


def corrupt(spec: dict[str, Any], clean: Path, dst: Path) -> Corruption:
    """Copy the clean bundle to `dst` and apply the corruption; returns it (for its expectations)."""
    shutil.copytree(clean, dst)
    c = Corruption(spec, dst)
    c.select()
    c.apply()
    c.write()
    return c
