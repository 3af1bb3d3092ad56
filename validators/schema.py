"""Every record against its object's JSON Schema (`schemas/objects/*.json`).

CSV cells are strings, so a record is first *typed*: an empty cell is null; in a field whose schema allows
booleans, `true`/`false` become booleans; in a field whose schema allows numbers, a decimal number becomes
a number. A cell that does not convert stays a string, so the schema reports a type error for it.

Formats are checked with a `jsonschema.FormatChecker` that knows orgseed's formats: `sf-id` (18 characters
with the right case-safe suffix), `sf-datetime` (`YYYY-MM-DDTHH:MM:SS.000+0000`), `date` and `email`.

Two paths give the same findings:
- `check_object_jsonschema` runs `jsonschema` on every typed record: the reference, and slow.
- `check_object` compiles each property's keywords to vectorised pandas checks. A property (or object) that
  uses a keyword the compiler does not know falls back to `jsonschema` for that property (or object), so
  the JSON Schemas stay the only source of truth. `tests/validators/test_schema.py` shows both paths agree
  on a sample holding every kind of violation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

import jsonschema
import numpy as np
import pandas as pd

from schemas.formats import (
    DATE_RE,
    EMAIL_RE,
    SF_DATETIME_RE,
    is_date,
    is_email,
    is_sf_datetime,
    is_sf_id,
    sf_id_suffix,
)
from schemas.model import FieldSpec, ObjectSpec, OrgModel
from validators.findings import Finding, finding, show

NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")

FORMATS: dict[str, Callable[[str], bool]] = {
    "sf-id": is_sf_id,
    "sf-datetime": is_sf_datetime,
    "date": is_date,
    "email": is_email,
}
FORMAT_HINTS = {
    "sf-id": "an 18-character Salesforce id whose last 3 characters are its case-safe suffix",
    "sf-datetime": "a UTC datetime written YYYY-MM-DDTHH:MM:SS.000+0000",
    "date": "a date written YYYY-MM-DD",
    "email": "an email address like name@example.com",
}
KEYWORD_RULES = {
    "type": "schema.type",
    "enum": "schema.picklist",
    "pattern": "schema.pattern",
    "format": "schema.format",
    "minLength": "schema.min-length",
    "maxLength": "schema.max-length",
    "minimum": "schema.minimum",
    "exclusiveMinimum": "schema.minimum",
    "maximum": "schema.maximum",
    "exclusiveMaximum": "schema.maximum",
}
ANNOTATIONS = frozenset(
    {"x-sf", "title", "description", "$comment", "default", "examples", "readOnly", "writeOnly", "deprecated"}
)
COMPILED = frozenset(KEYWORD_RULES) | ANNOTATIONS
OBJECT_KEYWORDS = frozenset(
    {
        "$schema",
        "$id",
        "title",
        "description",
        "$comment",
        "type",
        "properties",
        "required",
        "additionalProperties",
        "x-sf",
    }
)


@cache
def format_checker() -> jsonschema.FormatChecker:
    """A FormatChecker for orgseed's formats; like JSON Schema formats, each applies to strings only."""
    checker = jsonschema.FormatChecker(formats=())
    for name, check in FORMATS.items():
        checker.checks(name)(_strings_only(check))
    return checker


def _strings_only(check: Callable[[str], bool]) -> Callable[[object], bool]:
    def run(value: object) -> bool:
        return not isinstance(value, str) or check(value)

    return run


_ANCHORED = re.compile(r"\^[^|]*[^\\]\$")  # ^…$ with no alternation: search and fullmatch agree


@cache
def _multiline(pattern: str) -> re.Pattern[str]:
    return re.compile(f"^(?:{pattern})$", re.MULTILINE)


def _all_match(values: pd.Series, pattern: str) -> bool:
    """True when every cell is a string that fully matches `pattern`, decided in one pass in C.

    The cells are joined with newlines and `^(?:pattern)$` is counted in multi-line mode. A match can only start
    at a line start and cannot overlap the next one, so the count equals the number of cells exactly when every
    cell matches whole (a match spilling over a line break consumes the next line's start). False (undecided)
    when a cell holds a line break. The matches are counted by `subn` (the same leftmost, non-overlapping
    matches as `findall`), which builds no string or tuple of groups per match: a third of the time on
    `SF_DATETIME_RE`, whose seven groups `findall` returned as a tuple per cell.
    """
    if not len(values):
        return False
    joined = "\n".join(values.tolist())
    fixed = _fixed_width(pattern)
    if fixed is not None and joined.isascii():
        return _all_fixed(joined, len(values), *fixed)
    return joined.count("\n") == len(values) - 1 and _multiline(pattern).subn("", joined)[1] == len(values)


# a pattern's pieces: a character class, an escape, a group's opening, a repeat count, or one character
_PIECE = re.compile(r"\[(?:[^\]\\]|\\.)*\]|\\.|\(\?:|\{\d+\}|.", re.DOTALL)
_ONE_CHARACTER = re.compile(r"\\(?:[dwsDWS]|[^0-9A-Za-z])")  # the escapes that stand for one character
_GROUP = ("(", "(?:", ")")


@cache
def _fixed_width(pattern: str) -> tuple[int, tuple[tuple[np.ndarray, bytes], ...]] | None:
    """For a pattern every match of which is one fixed number of characters, each from a set of its own (a
    sequence of characters, `[...]` classes and escapes such as `\\d`, each perhaps repeated `{n}` times, in
    groups without alternation; `^` and `$` only at its ends): its width, and for each distinct set the
    positions that ask for it and the ASCII characters it holds (line breaks aside), as the regex engine
    decides them a character at a time. None for any other pattern."""
    pieces = _PIECE.findall(pattern)
    if pieces[:1] == ["^"]:
        pieces = pieces[1:]
    if pieces[-1:] == ["$"]:
        pieces = pieces[:-1]
    positions: list[str] = []  # each position's one-character pattern
    last = ""
    for piece in pieces:
        if piece.startswith("{") and len(piece) > 1:
            times = int(piece[1:-1])
            if last in _GROUP or not positions or times < 1:  # a repeated group or nothing: not handled
                return None
            positions.extend([positions[-1]] * (times - 1))
        elif piece in _GROUP:
            pass
        elif (piece.startswith("[") and not piece.startswith("[^")) or _ONE_CHARACTER.fullmatch(piece):
            positions.append(piece)
        elif len(piece) == 1 and piece not in "^$.*+?|{}()[]\\":
            positions.append(re.escape(piece))
        else:
            return None
        last = piece
    at: dict[str, list[int]] = {}
    for i, one in enumerate(positions):
        at.setdefault(one, []).append(i)
    sets = tuple(
        (np.array(where), bytes(c for c in range(128) if c != 10 and re.fullmatch(one, chr(c))))
        for one, where in at.items()
    )
    return len(positions), sets


def _all_fixed(joined: str, count: int, width: int, sets: tuple[tuple[np.ndarray, bytes], ...]) -> bool:
    """`_all_match` of `count` cells joined by line breaks into the ASCII `joined`, for a `_fixed_width`
    pattern: the cells, each followed by a line break, are rows of `width` + 1 bytes, each set's columns
    holding nothing but its characters (a C pass deleting them), the last column nothing but line breaks."""
    cells = np.frombuffer((joined + "\n").encode("ascii"), dtype=np.uint8)
    if len(cells) != count * (width + 1):
        return False
    rows = cells.reshape(count, width + 1)
    if rows[:, width].tobytes().translate(None, b"\n"):
        return False
    return not any(rows[:, where].tobytes().translate(None, allowed) for where, allowed in sets)


def _fullmatch(values: pd.Series, pattern: str, present: np.ndarray | None = None) -> np.ndarray:
    """Which cells fully match `pattern` (False for empty cells): all at once in C when all do. `present`:
    `values.notna()`, when the caller has it."""
    present = values.notna().to_numpy(copy=True) if present is None else present.copy()
    if _all_match(values[present], pattern):
        return present
    return _mask(values.str.fullmatch(pattern))


def _searches(values: pd.Series, pattern: str, present: np.ndarray | None = None) -> np.ndarray:
    """Which cells contain a match of `pattern` (JSON Schema `pattern`: `re.search` semantics). `present`:
    `values.notna()`, when the caller has it."""
    # For a pattern anchored at both ends with no alternation, on cells without a line break, search and
    # fullmatch agree; cell by cell they may not (`$` also matches before a final newline).
    present = values.notna().to_numpy(copy=True) if present is None else present.copy()
    if _ANCHORED.fullmatch(pattern) and _all_match(values[present], pattern[1:-1]):
        return present
    return _mask(values.str.contains(pattern, regex=True))


def _sf_id_ok(values: pd.Series) -> np.ndarray:
    """`is_sf_id` for a column of strings, vectorised."""
    ok = _fullmatch(values, r"[0-9A-Za-z]{15}[A-Z0-5]{3}")
    if ok.any():  # the ids that match are 18 ASCII characters each: one byte each
        chars = np.frombuffer("".join(values[ok].tolist()).encode("ascii"), dtype=np.uint8).reshape(-1, 18)
        upper = (chars[:, :15] >= ord("A")) & (chars[:, :15] <= ord("Z"))
        bits = (upper.reshape(-1, 3, 5) * (1 << np.arange(5))).sum(axis=2)
        ok[ok] = (_SUFFIX[bits] == chars[:, 15:]).all(axis=1)
    return ok


def _sf_datetime_ok(values: pd.Series) -> np.ndarray:
    """`is_sf_datetime` for a column of strings, vectorised."""
    shaped = _fullmatch(values, SF_DATETIME_RE.pattern)
    parsed = pd.to_datetime(values.str.slice(0, 19), format="%Y-%m-%dT%H:%M:%S", errors="coerce")
    return shaped & parsed.notna().to_numpy()


def _date_ok(values: pd.Series) -> np.ndarray:
    """`is_date` for a column of strings, vectorised."""
    shaped = _fullmatch(values, DATE_RE.pattern)
    return shaped & pd.to_datetime(values, format="%Y-%m-%d", errors="coerce").notna().to_numpy()


def _email_ok(values: pd.Series) -> np.ndarray:
    """`is_email` for a column of strings, vectorised."""
    return _fullmatch(values, EMAIL_RE.pattern) & (values.str.len() <= 254).to_numpy()


_SUFFIX = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ012345", dtype=np.uint8)  # the suffix characters' bytes
VECTOR_FORMATS: dict[str, Callable[[pd.Series], np.ndarray]] = {
    "sf-id": _sf_id_ok,
    "sf-datetime": _sf_datetime_ok,
    "date": _date_ok,
    "email": _email_ok,
}


# -- typed records -------------------------------------------------------------------------------------


def json_types(prop: dict[str, Any]) -> frozenset[str]:
    t = prop.get("type")
    if t is None:
        return frozenset()
    return frozenset([t] if isinstance(t, str) else t)


# Salesforce numbers have at most 18 digits; a longer cell stays text (a type finding), never an int() of
# thousands of digits (Python refuses past 4,300) or a float that is silently infinite.
MAX_NUMBER_CHARS = 40


def convert_cell(cell: str | None, types: frozenset[str]) -> Any:
    """One CSV cell as the JSON value the schema sees (see the module docstring)."""
    if cell is None:
        return None
    if "boolean" in types and cell in ("true", "false"):
        return cell == "true"
    if types & {"number", "integer"} and len(cell) <= MAX_NUMBER_CHARS and NUMBER_RE.fullmatch(cell):
        if any(c in cell for c in ".eE"):
            value = float(cell)
            return value if math.isfinite(value) else cell
        return int(cell)
    return cell


def typed_record(spec: ObjectSpec, row: dict[str, Any]) -> dict[str, Any]:
    return {f.name: convert_cell(row.get(f.name), json_types(f.json_schema)) for f in spec.fields}


# -- messages --------------------------------------------------------------------------------------------


def _expected_type(types: frozenset[str]) -> str:
    names = {"integer": "an integer", "number": "a number", "boolean": "`true` or `false`", "string": "text"}
    parts = [names[t] for t in ("integer", "number", "boolean", "string") if t in types]
    return " or ".join(parts) or "a value"


def _id_hint(model: OrgModel | None, fspec: FieldSpec, pattern: str) -> str:
    prefix = re.match(r"\^([0-9A-Za-z]{3})\[", pattern)
    if not prefix or not (fspec.is_lookup or fspec.type == "id") or model is None:
        return ""
    target = model.object_for_prefix(prefix.group(1))
    return f" (an 18-character {target} id starting with `{prefix.group(1)}`)" if target else ""


def describe(
    spec: ObjectSpec,
    record: Any,
    fspec: FieldSpec,
    keyword: str,
    expected: Any,
    value: Any,
    model: OrgModel | None,
    fallback: str = "",
) -> tuple[str, str]:
    """(rule id, message) for a value that breaks `keyword`; the same text on both paths."""
    name = f"{spec.name} {record if record is not None else '(no Id)'}: `{fspec.name}`"
    if value is None:
        return "schema.required", f"{name} is empty, but every {spec.name} needs a value. Fill it in."
    rule = KEYWORD_RULES.get(keyword, "schema.constraint")
    if keyword == "type":
        types = frozenset([expected] if isinstance(expected, str) else expected) - {"null"}
        text = f"{name} is {show(value)}; expected {_expected_type(types)}."
    elif keyword == "enum":
        allowed = ", ".join(f"`{v}`" for v in expected if v is not None)
        empty = " (or empty)" if None in expected else ""
        text = f"{name} is {show(value)}, which is not a picklist value; expected one of {allowed}{empty}."
    elif keyword == "pattern":
        text = f"{name} is {show(value)}; expected a value matching `{expected}`{_id_hint(model, fspec, expected)}."
    elif keyword == "format":
        hint = FORMAT_HINTS.get(expected, f"the `{expected}` format")
        if expected == "sf-id" and isinstance(value, str) and len(value) == 18:
            hint += f" (`{sf_id_suffix(value[:15])}` for this id)"
        text = f"{name} is {show(value)}; expected {hint}."
    elif keyword == "maxLength":
        text = (
            f"{name} has {len(value)} characters; at most {expected} fit (it would be cut off when loaded)."
        )
    elif keyword == "minLength":
        text = f"{name} has {len(value)} characters; expected at least {expected}."
    elif keyword in ("minimum", "exclusiveMinimum"):
        bound = "at least" if keyword == "minimum" else "more than"
        text = f"{name} is {show(value)}; expected {bound} {expected}."
    elif keyword in ("maximum", "exclusiveMaximum"):
        bound = "at most" if keyword == "maximum" else "less than"
        text = f"{name} is {show(value)}; expected {bound} {expected}."
    else:
        text = f"{name} is {show(value)}: {fallback or f'breaks `{keyword}`'}."
    return rule, text


# -- the reference path: jsonschema per record ----------------------------------------------------------


def _validator_for(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema, format_checker=format_checker())


def check_object_jsonschema(
    spec: ObjectSpec, raw: pd.DataFrame, model: OrgModel | None = None
) -> list[Finding]:
    """Run `jsonschema` on every typed record (the reference path)."""
    validator = _validator_for(spec.json_schema)
    file = f"data/{spec.name}.csv"
    out: list[Finding] = []
    columns = [f.name for f in spec.fields]
    for row in raw[[*columns, "_line"]].to_dict("records"):
        record = typed_record(spec, row)
        for err in validator.iter_errors(record):
            out.append(_from_error(spec, err, row, file, model))
    return out


def _from_error(
    spec: ObjectSpec, err: jsonschema.ValidationError, row: dict[str, Any], file: str, model: OrgModel | None
) -> Finding:
    path = list(err.absolute_path)
    fname = str(path[0]) if path else None
    if fname is None or not spec.has_field(fname):
        return finding(
            "schema.constraint",
            f"{spec.name} {row.get('Id')}: {err.message}.",
            object=spec.name,
            record=row.get("Id"),
            file=file,
            line=row.get("_line"),
        )
    fspec = spec.field(fname)
    rule, text = describe(
        spec, row.get("Id"), fspec, str(err.validator), err.validator_value, err.instance, model, err.message
    )
    return finding(
        rule, text, object=spec.name, record=row.get("Id"), field=fname, file=file, line=row.get("_line")
    )


# -- the fast path: vectorised checks compiled from the same schema --------------------------------------


def check_object(spec: ObjectSpec, raw: pd.DataFrame, model: OrgModel | None = None) -> list[Finding]:
    """The same findings as `check_object_jsonschema`, computed column by column."""
    if set(spec.json_schema) - OBJECT_KEYWORDS:
        return check_object_jsonschema(spec, raw, model)
    file = f"data/{spec.name}.csv"
    ids = raw["Id"].to_numpy()
    lines = raw["_line"].to_numpy()
    out: list[Finding] = []
    for fspec in spec.fields:
        prop = fspec.json_schema
        col = raw[fspec.name]
        if set(prop) - COMPILED:
            hits: Iterable[tuple[int, str, Any, Any, str]] = _property_jsonschema(prop, col)
        else:
            hits = _property_fast(prop, col)
        for pos, keyword, expected, value, fallback in hits:
            rule, text = describe(spec, ids[pos], fspec, keyword, expected, value, model, fallback)
            out.append(
                finding(
                    rule,
                    text,
                    object=spec.name,
                    record=ids[pos],
                    field=fspec.name,
                    file=file,
                    line=lines[pos],
                )
            )
    return out


def _property_jsonschema(prop: dict[str, Any], col: pd.Series) -> list[tuple[int, str, Any, Any, str]]:
    validator = _validator_for(prop)
    types = json_types(prop)
    out = []
    for pos, cell in enumerate(col.to_numpy()):
        value = convert_cell(cell, types)
        for err in validator.iter_errors(value):
            out.append((pos, str(err.validator), err.validator_value, value, err.message))
    return out


def _mask(values: pd.Series) -> np.ndarray:
    return values.fillna(False).to_numpy(dtype=bool, copy=True)


def _property_fast(prop: dict[str, Any], col: pd.Series) -> list[tuple[int, str, Any, Any, str]]:
    types = json_types(prop)
    cells = col.to_numpy(dtype=object)
    null = col.isna().to_numpy()
    present = ~null
    is_bool = np.zeros(len(col), dtype=bool)
    is_num = np.zeros(len(col), dtype=bool)
    nums = np.full(len(col), np.nan)
    if "boolean" in types:
        is_bool = present & col.isin(["true", "false"]).to_numpy()
    if types & {"number", "integer"}:
        candidate = present & _fullmatch(col, NUMBER_RE.pattern, present)
        parsed = pd.to_numeric(col.where(candidate), errors="coerce").to_numpy(dtype=float)
        is_num = candidate & np.isfinite(parsed)
        nums = np.where(is_num, parsed, np.nan)
    is_str = present & ~is_bool & ~is_num

    def value(pos: int) -> Any:
        return convert_cell(cells[pos], types)

    hits: list[tuple[int, str, Any, Any, str]] = []

    def add(mask: np.ndarray, keyword: str) -> None:
        for pos in np.flatnonzero(mask):
            hits.append((int(pos), keyword, prop[keyword], value(int(pos)), ""))

    if "type" in prop:
        bad = np.zeros(len(col), dtype=bool)
        if "null" not in types:
            bad |= null
        if "boolean" not in types:
            bad |= is_bool
        if "string" not in types:
            bad |= is_str
        if "number" not in types:
            integral = is_num & (np.mod(np.nan_to_num(nums), 1) == 0)
            bad |= is_num & ~integral if "integer" in types else is_num
        add(bad, "type")
    if "enum" in prop:
        allowed = prop["enum"]
        # Decided once per distinct cell (a cell's JSON value depends only on its text); code -1 is empty.
        codes, uniques = pd.factorize(cells, use_na_sentinel=True)
        verdicts = [_in_enum(convert_cell(u, types), allowed) for u in uniques]
        verdicts.append(_in_enum(None, allowed))
        add(~np.array(verdicts, dtype=bool)[codes], "enum")
    if "pattern" in prop:
        add(is_str & ~_searches(col, prop["pattern"], present), "pattern")
    if "format" in prop and prop["format"] in FORMATS and is_str.any():
        ok = np.ones(len(col), dtype=bool)
        ok[is_str] = VECTOR_FORMATS[prop["format"]](col[is_str])
        add(~ok, "format")
    if "minLength" in prop or "maxLength" in prop:
        length = col.str.len().to_numpy(dtype=float, na_value=np.nan)
        if "minLength" in prop:
            add(is_str & (length < prop["minLength"]), "minLength")
        if "maxLength" in prop:
            add(is_str & (length > prop["maxLength"]), "maxLength")
    with np.errstate(invalid="ignore"):
        if "minimum" in prop:
            add(is_num & (nums < prop["minimum"]), "minimum")
        if "exclusiveMinimum" in prop:
            add(is_num & (nums <= prop["exclusiveMinimum"]), "exclusiveMinimum")
        if "maximum" in prop:
            add(is_num & (nums > prop["maximum"]), "maximum")
        if "exclusiveMaximum" in prop:
            add(is_num & (nums >= prop["exclusiveMaximum"]), "exclusiveMaximum")
    return hits


def _in_enum(value: Any, allowed: list[Any]) -> bool:
    """JSON Schema enum membership: booleans never equal numbers."""
    for item in allowed:
        if isinstance(value, bool) or isinstance(item, bool):
            if value is item:
                return True
        elif value == item:
            return True
    return False


def check_schema(raw: dict[str, pd.DataFrame], model: OrgModel) -> list[Finding]:
    """Every readable object against its JSON Schema (fast path)."""
    out: list[Finding] = []
    for spec in model:
        if spec.name in raw:
            out.extend(check_object(spec, raw[spec.name], model))
    return out
