"""The output bundle: the contract between every stage.

```
<root>/manifest.json          format, profile, seed, scale, writer, counts, per-file SHA-256, timings
<root>/data/<Object>.csv      header = API field names; Salesforce value formats; empty = null
<root>/data/<Object>/part-NNNNN.csv   the same, in parts, for an object whose CSV passes the part size
<root>/latent/<name>.csv|json the hidden variables (never uploaded)
<root>/tasks/                 task instances, schema config, ground truth
<root>/reports/               validation findings, audits, LLM usage
<root>/org.sqlite             the embedded org's store
```

Writing never drops a column: a frame must hold every field of its object (columns starting with `_` are
latent and go to `latent/`). Reading names the file and line of anything it cannot parse.

Parts. An object whose CSV would be larger than the part size (`PART_BYTES`, 100,000,000 bytes: within Bulk
API 2.0's 150 MB per upload and simple-salesforce's 100 MiB, so each part is one upload) is written as
`data/<Object>/part-00001.csv`, `part-00002.csv`, ...: each part a whole CSV (the header, then whole rows,
in record order), at most the part size (a part exceeds it only when one row alone does), the parts numbered
from 1 without gaps. The manifest's `/objects/<Object>` lists the parts (`parts`: file, rows, bytes, sha256);
`/files` lists each part. `data_sha256` is over the logical records: for every object, its name and the
SHA-256 of its records as one CSV (the header once, then every row in order) — for a single-file object,
that file's SHA-256; for a parted object, what the single file would hash to. So the layout never changes
`data_sha256`, and neither do shard or worker counts (the records do not depend on them). Readers read
both layouts (`data_files`, `read_raw`); a part missing, a stray file among the parts, or both layouts of
one object present is one BundleError naming the file.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import itertools
import json
import os
import re
import shutil
import stat
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from schemas.errors import Terminal
from schemas.formats import (
    bool_column,
    date_column,
    datetime_column,
    money_column,
    number_column,
)
from schemas.model import ObjectSpec, OrgModel

FORMAT = "orgseed-bundle"
FORMAT_VERSION = 1
TOOL_VERSION = "0.1.0"
PART_BYTES = 100_000_000  # the largest part: one Bulk API 2.0 upload (150 MB; simple-salesforce: 100 MiB)
MIN_PART_BYTES = 4096
PART_RE = re.compile(r"part-([0-9]{5})\.csv")
MAX_PARTS = 99_999


class BundleError(Terminal):
    """The bundle cannot be read or written (names the file, and the row where known)."""


@dataclass(frozen=True)
class FileEntry:
    path: str  # relative to the bundle root, with forward slashes
    sha256: str
    bytes: int
    rows: int | None = None
    # a parted object's data: its parts; `path` is then the logical data/<Object>.csv and `sha256` the hash of
    # its records as one CSV (see the module's docstring)
    parts: tuple[FileEntry, ...] = ()


def part_rel(sobject: str, number: int) -> str:
    """The bundle path of part `number` (from 1) of `sobject`'s data."""
    return f"data/{sobject}/part-{number:05d}.csv"


def sha256_file(path: Path, root: Path | None = None) -> str:
    """The SHA-256 of a regular file (see `open_regular`: within `root` when given)."""
    h = hashlib.sha256()
    with open_regular(path, root=root) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def open_regular(path: Path, root: Path | None = None, limit: int | None = None) -> io.BufferedReader:
    """`path` opened for reading, only when it is a regular file (of at most `limit` bytes) and, when `root`
    is given, inside `root` once links are followed. Anything else (a FIFO, a device, a folder, a link
    leaving the bundle) is refused with a BundleError without reading from it, so a reader never hangs on
    a pipe or reads /dev/zero forever."""
    path = Path(path)
    if root is not None:
        try:
            inside = path.resolve().is_relative_to(Path(root).resolve())
        except (OSError, RuntimeError):  # a link loop
            inside = False
        if not inside:
            raise BundleError(
                f"{path} leads outside the bundle {root} (a link or a path with `..`); a bundle holds its own "
                "files. Replace it with the file itself or rebuild the bundle.",
                file=str(path),
            )
    try:
        fd = os.open(
            path, os.O_RDONLY | os.O_NONBLOCK
        )  # a FIFO opens at once instead of waiting for a writer
    except FileNotFoundError:
        raise BundleError(f"{path} is missing; restore it or rebuild the bundle.", file=str(path)) from None
    except OSError as exc:
        raise BundleError(f"{path} cannot be read ({exc.strerror}).", file=str(path)) from None
    st = os.fstat(fd)
    kind = _KINDS.get(stat.S_IFMT(st.st_mode))
    if kind is not None or not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise BundleError(
            f"{path} is {kind or 'not a regular file'}, not a file; orgseed reads only regular files in a bundle. "
            "Replace it with the file the build wrote, or rebuild the bundle.",
            file=str(path),
        )
    if limit is not None and st.st_size > limit:
        os.close(fd)
        raise BundleError(
            f"{path} is {st.st_size:,} bytes; orgseed reads at most {limit:,} bytes from it. Rebuild the bundle.",
            file=str(path),
        )
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_text_regular(path: Path, label: str, root: Path | None = None, limit: int | None = None) -> str:
    """A regular file's text (see `open_regular`), BundleError naming `label` when it is not UTF-8."""
    with open_regular(path, root=root, limit=limit) as fh:
        data = fh.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(f"{label}: not UTF-8 ({exc.reason} at byte {exc.start}).", file=label) from exc


MAX_JSON_DEPTH = 64


# a JSON string (escapes included), or an unterminated one up to the end of the text
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def load_json_bounded(text: str, label: str) -> Any:
    """JSON text with nesting bounded by MAX_JSON_DEPTH (deeper documents are refused before parsing)."""
    depth = 0
    for bracket in _JSON_BRACKET.findall(_JSON_STRING.sub("", text)):  # the brackets outside strings
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            raise BundleError(
                f"{label}: nested more than {MAX_JSON_DEPTH} levels deep; orgseed never writes that. "
                "Rebuild the bundle.",
                file=label,
            )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BundleError(
            f"{label}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg}); rebuild the bundle.",
            file=label,
            line=exc.lineno,
        ) from exc
    except (ValueError, RecursionError) as exc:  # e.g. an integer past Python's 4,300-digit limit
        raise BundleError(f"{label}: unreadable JSON ({exc}); rebuild the bundle.", file=label) from exc


def data_digest(entries: dict[str, str]) -> str:
    """One hash over the data (name and content hash), in name order. `entries` maps `data/<Object>.csv` to
    the hash of the object's records as one CSV (`logical_data`); a bundle without parts may pass its /files.
    Part files (`data/<Object>/...`) are never hashed here: their object's logical entry stands for them."""
    h = hashlib.sha256()
    for name in sorted(entries):
        if name.startswith("data/") and "/" not in name[len("data/") :]:
            h.update(f"{name}\0{entries[name]}\n".encode())
    return h.hexdigest()


def logical_data(objects: dict[str, dict[str, Any]]) -> dict[str, str]:
    """`data/<Object>.csv` -> the SHA-256 of its records as one CSV, from the manifest's /objects."""
    return {f"data/{name}.csv": str(entry["sha256"]) for name, entry in objects.items()}


def split_rows(header: bytes, rows: list[bytes], limit: int) -> list[list[bytes]]:
    """`rows` (each a CSV row's bytes) grouped in order into parts of at most `limit` bytes with the header;
    a row too large for any part is a part of its own."""
    parts: list[list[bytes]] = []
    current: list[bytes] = []
    size = len(header)
    for row in rows:
        if current and size + len(row) > limit:
            parts.append(current)
            current, size = [], len(header)
        current.append(row)
        size += len(row)
    if current or not parts:
        parts.append(current)
    return parts


def format_frame(spec: ObjectSpec, frame: pd.DataFrame) -> pd.DataFrame:
    """The object's columns, in model order, as Salesforce-formatted strings (None = empty)."""
    check_fields(spec, frame)
    return pd.DataFrame({f.name: _format_column(f.type, frame[f.name]) for f in spec.fields})


def check_fields(spec: ObjectSpec, frame: pd.DataFrame) -> None:
    """BundleError unless `frame` has every field of `spec` and no column that is neither a field nor latent."""
    missing = [f.name for f in spec.fields if f.name not in frame.columns]
    if missing:
        raise BundleError(
            f"Cannot write {spec.name}: the frame lacks the field(s) {', '.join(missing)}. "
            "Every field of the model must be produced, by generator code or by its rule in the model "
            "(x-sf.generate, schemas/rules.py); use None for empty values.",
            sobject=spec.name,
        )
    extra = [c for c in frame.columns if not str(c).startswith("_") and not spec.has_field(str(c))]
    if extra:
        raise BundleError(
            f"Cannot write {spec.name}: column(s) {', '.join(map(str, extra))} are not fields of the model. "
            "Add them to schemas/objects/ or prefix latent columns with `_`.",
            sobject=spec.name,
        )


def _format_column(ftype: str, col: pd.Series) -> pd.Series:
    """One column of `format_frame`: Salesforce-formatted strings of a field of type `ftype` (None = empty)."""
    if ftype == "datetime":
        return datetime_column(col)
    if ftype == "date":
        return date_column(col)
    if ftype == "boolean":
        return bool_column(col)
    if ftype == "currency":
        return money_column(col)
    if ftype in ("double", "int"):
        return number_column(col)
    s = pd.Series(col, dtype=object)
    return s.where(s.notna(), None)


def _to_csv_bytes(frame: pd.DataFrame) -> bytes:
    """RFC 4180 CSV (minimal quoting, LF line ends, empty for null), as `_csv_rows` writes it."""
    return "".join(_csv_lines(frame)).encode("utf-8")


def _csv_lines(frame: pd.DataFrame) -> list[str]:
    """The CSV of `frame` as the header's text, then each row's."""
    header = _csv_rows([[str(c)] for c in frame.columns])
    return header + _csv_rows([_cells(frame[c]) for c in frame.columns])


def _csv_rows(columns: Sequence[list[Any]]) -> list[str]:
    """Each row's CSV text, given the cells column by column: the text Python's csv writer writes for the rows
    (`lineterminator="\\n"`, QUOTE_MINIMAL) but for a carriage return, which it quotes; built a column at a
    time (`_csv_column`) and joined by str.join, ~3x faster than the C writer, which copies and inspects every
    character of every cell."""
    texts = [_csv_column(values) for values in columns]
    if len(texts) == 1:  # the writer quotes a row's only cell when empty, or the line would be blank
        texts = [[text or '""' for text in texts[0]]]
    return [line + "\n" for line in map(",".join, zip(*texts, strict=True))]


def csv_text(rows: Iterable[Sequence[Any]]) -> str:
    """`rows` (each as wide as the first) as CSV text, as `_csv_rows` writes them: for every CSV orgseed
    writes besides a bundle's (the upload jobs, the id map, the local org's job results)."""
    listed = [list(r) for r in rows]
    if not listed:
        return ""
    if not listed[0]:
        raise ValueError("a CSV row needs at least one cell")
    return "".join(_csv_rows([list(column) for column in zip(*listed, strict=True)]))


def _csv_column(values: list[Any]) -> list[str]:
    """One column's cells as the csv writer writes them: text as it is, None as "", anything else as str()
    makes it; quoted, its quotes doubled, when it holds a comma, a quote, a line feed or a carriage return.

    Unlike Python's csv writer with a "\\n" line terminator, which leaves a carriage return bare (it quotes
    only the terminator's characters): RFC 4180 quotes it, and every CSV reader but the csv module's ends a
    row at a bare one. pandas' C reader, which reads bundles for the store, the task builders and checks,
    read "x\\r" as "x" and "p\\rq" as two rows."""
    kinds = set(map(type, values))
    if not kinds <= {str}:
        if any(issubclass(k, str) or k is type(None) for k in kinds):
            values = [v if isinstance(v, str) else "" if v is None else str(v) for v in values]
        else:
            values = list(map(str, values))
    joined = "".join(values)  # one search of the column's text for the characters that need quoting
    if "," in joined or '"' in joined or "\n" in joined or "\r" in joined:
        values = [_quoted(v) if "," in v or '"' in v or "\n" in v or "\r" in v else v for v in values]
    return values


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _cells(col: pd.Series) -> list[Any]:
    """A column's values as the csv writer receives them: None and NaN of a text column as ""."""
    values = col.tolist()
    # `hasnans` (pd.isna, in C) finds every None and NaN, and more: a column without any has nothing to blank
    if (col.dtype == object or str(col.dtype) in ("str", "string")) and col.hasnans:
        values = ["" if v is None or (isinstance(v, float) and v != v) else v for v in values]
    return values


# Datetimes the vectorised formatter writes: years 1000-9999 (four digits, as strftime's %Y writes them).
_FAST_DT_LO = np.datetime64("1000-01-01T00:00:00", "s")
_FAST_DT_HI = np.datetime64("9999-12-31T23:59:59", "s")


def _null_mask(values: np.ndarray) -> np.ndarray:
    return np.asarray(pd.isna(values), dtype=bool)


def _fast_datetimes(col: pd.Series, unit: str) -> list[str] | None:
    """`col` (naive datetime64) as `datetime_column` (unit "s") or `date_column` (unit "D") writes it, with ""
    for NaT; None when the column is not plain naive datetime64 within years 1000-9999 (the caller then
    formats it with schemas/formats.py)."""
    if not (isinstance(col.dtype, np.dtype) and col.dtype.kind == "M"):
        return None
    values = col.to_numpy().astype("datetime64[s]")  # whole seconds, as strftime writes them (floor)
    nat = np.isnat(values)
    known = values[~nat]
    if len(known) and (known.min() < _FAST_DT_LO or known.max() > _FAST_DT_HI):
        return None
    if unit == "D":
        text = np.datetime_as_string(values.astype("datetime64[D]"), unit="D").astype(object)
    else:
        text = np.char.add(np.datetime_as_string(values, unit="s"), ".000+0000").astype(object)
    text[nat] = ""
    return list(text.tolist())


def _csv_cells(spec: ObjectSpec, frame: pd.DataFrame) -> list[list[Any]]:
    """Per field of `spec`, in model order, the cells `_csv_lines(format_frame(spec, frame))` writes for its
    rows ("" for null; other values as the csv writer turns them into text): the same bytes, formatted a
    column at a time with numpy where a column's type allows it."""
    columns: list[list[Any]] = []
    for f in spec.fields:
        col = frame[f.name]
        values: list[Any] | None = None
        if f.type in ("datetime", "date"):
            values = _fast_datetimes(col, "s" if f.type == "datetime" else "D")
        elif f.type == "boolean":
            if col.dtype == bool:
                values = np.where(col.to_numpy(), "true", "false").astype(object).tolist()
        elif f.type in ("currency", "double", "int"):
            if col.dtype == np.float64:  # money_column / number_column of each value, without pandas' map
                floats = col.tolist()
                if f.type == "currency":
                    values = [format(v, ".2f") if v == v else "" for v in floats]
                else:
                    values = [("" if v != v else str(int(v)) if v.is_integer() else repr(v)) for v in floats]
        else:  # text: the value itself, "" for null
            arr = col.to_numpy(dtype=object, copy=True)
            arr[_null_mask(arr)] = ""
            values = arr.tolist()
        if values is None:  # the shared formatters of schemas/formats.py, as format_frame, then nulls as ""
            values = _cells(_format_column(f.type, col))
        columns.append(values)
    return columns


def _row_lines(spec: ObjectSpec, frame: pd.DataFrame) -> list[str]:
    """The CSV text of each row of `frame`: `_csv_lines(format_frame(spec, frame))[1:]`, formatted by
    `_csv_cells`."""
    return _csv_rows(_csv_cells(spec, frame))


_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))  # json.dumps(v, separators=(",", ":")), made once


def _latent_kinds(frame: pd.DataFrame) -> dict[str, str]:
    """Id and the latent ("_") columns of `frame`, each with how it is written, decided once for the whole
    frame: "datetime", "bool", "json" (a column of lists or dicts, by its first value), or "" (as it is)."""
    kinds = {}
    for c in ["Id", *[c for c in frame.columns if str(c).startswith("_")]]:
        col = frame[c]
        if col.dtype.kind == "M":
            kinds[c] = "datetime"
        elif col.dtype.kind == "b":
            kinds[c] = "bool"
        elif col.dtype == object and len(col) and isinstance(col.iloc[0], list | dict):
            kinds[c] = "json"
        else:
            kinds[c] = ""
    return kinds


def _latent_block(frame: pd.DataFrame, kinds: dict[str, str]) -> pd.DataFrame:
    """Rows of `frame` as latent/<Object>.csv writes them (`_latent_kinds`: the whole frame's kinds; every
    conversion is value by value, so blocks converted apart are the whole converted at once)."""
    latent = frame[list(kinds)].copy()
    for c, kind in kinds.items():
        if kind == "datetime":
            # NaT as "": the same empty cell as datetime_column's None
            fast = _fast_datetimes(latent[c], "s")
            latent[c] = datetime_column(latent[c]) if fast is None else fast
        elif kind == "bool":
            latent[c] = bool_column(latent[c])
        elif kind == "json":
            latent[c] = [_COMPACT_JSON.encode(v) for v in latent[c]]
    return latent


# -- where a bundle may be written ----------------------------------------------------------------------------

# What orgseed itself puts in a bundle's root; `--force` replaces a folder holding nothing else.
BUNDLE_ENTRIES = frozenset({"manifest.json", "data", "latent", "tasks", "reports", "tls", "uploads", ".work"})
STORE_PREFIX = "org.sqlite"  # the embedded org's store and its SQLite side files
CARRIED = ("tls",)  # kept across rebuilds: clients trusting the served org's certificate go on trusting it
STAGING_SUFFIX = ".orgseed-staging"
REPLACED_SUFFIX = ".orgseed-replaced"
STAGING_MARK = ".orgseed-staging"
MAX_MANIFEST_BYTES = 64 * 1024 * 1024


def staging_path(target: Path) -> Path:
    """Where a build of `target` is staged: a hidden folder beside it."""
    return target.parent / f".{target.name}{STAGING_SUFFIX}"


def foreign_content(root: Path) -> str | None:
    """None when `root` is empty or an orgseed bundle (a manifest with orgseed's format marker and files
    list, and nothing orgseed does not put there); otherwise why it is not, as a clause for a message."""
    try:
        entries = sorted(p.name for p in root.iterdir())
    except OSError as exc:
        return f"cannot be listed ({exc.strerror})"
    if not entries:
        return None
    manifest = root / "manifest.json"
    if manifest.is_symlink() or not manifest.is_file():
        return "is not empty and holds no orgseed manifest.json"
    if manifest.stat().st_size > MAX_MANIFEST_BYTES:
        return "holds a manifest.json too large to be orgseed's"
    try:
        doc = json.loads(manifest.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "holds a manifest.json that is not orgseed's (not JSON)"
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("files"), dict):
        return "holds a manifest.json without orgseed's format marker and files list"
    foreign = [n for n in entries if n not in BUNDLE_ENTRIES and not n.startswith(STORE_PREFIX)]
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        return f"holds what orgseed did not create ({shown})"
    return None


def check_output_folder(root: Path, force: bool) -> Path:
    """The resolved `--out` folder, or BundleError (exit 2) when orgseed may not write there.

    Refused outright: the filesystem root, the home directory, the current directory and any folder holding
    it, and a path that is not a folder. A non-empty folder is replaced only when it is an orgseed bundle
    (`foreign_content`) and `force` is given. Nothing is touched here.
    """
    target = Path(root).expanduser().resolve()
    cwd = Path.cwd().resolve()
    home = Path.home().resolve()
    if target == Path(target.anchor) or target in (home, cwd) or target in cwd.parents:
        what = (
            "the filesystem root"
            if target == Path(target.anchor)
            else ("your home directory" if target == home else "the current directory or a folder holding it")
        )
        raise BundleError(
            f"--out {root} is {what}; orgseed never builds there. Choose a folder of its own, e.g. "
            "output/<name>. Nothing was changed.",
            file=str(root),
        )
    if target.exists() and not target.is_dir():
        raise BundleError(f"{root} exists and is not a folder; choose another --out.", file=str(root))
    if target.exists():
        reason = foreign_content(target)
        if reason is not None:
            raise BundleError(
                f"The output folder {root} {reason}; orgseed only replaces its own bundles, even with --force. "
                "Choose another --out (an empty or new folder). Nothing was changed.",
                file=str(root),
            )
        if any(target.iterdir()) and not force:
            raise BundleError(
                f"The output folder {root} holds an orgseed bundle. Pass --force to replace it (it stays whole "
                "until the new one is complete), or choose another --out. Nothing was changed.",
                file=str(root),
            )
    return target


def require_complete(root: Path) -> dict[str, Any]:
    """The manifest of a bundle whose build completed; BundleError (exit 2) for any other status."""
    bundle = Bundle(root)
    manifest = bundle.read_manifest()
    check_complete(manifest, bundle.manifest_path)
    return manifest


def check_complete(manifest: dict[str, Any], path: Path) -> None:
    """BundleError (exit 2) unless the manifest at `path` says its build completed."""
    status = manifest.get("status")
    if status != "complete":
        raise BundleError(
            f"{path}: /status is {status!r}, not 'complete': the build that wrote this bundle "
            "did not finish (it was killed, failed, or is still running). Rebuild it with `orgseed build "
            "--force --out ...`.",
            file=str(path),
        )


WRITE_ROWS = 50_000  # rows formatted and written at a time, at most
# ... and fewer for wide rows: a block's CSV text near WRITE_BYTES (its cells, rows and bytes are held at once:
# 50,000 of scale 300's emails were ~100 MB above the frame), sized from the rows written so far
WRITE_BYTES = 8 * 1024 * 1024
FIRST_ROWS = 2048  # the first block, before any row's size is known


def _blocks(rows: int) -> Iterator[tuple[int, int, Callable[[int], None]]]:
    """(start, stop, wrote) for each block of `rows` rows to format and write in turn: WRITE_ROWS at most and
    about WRITE_BYTES of text, from the mean size of the rows before it (`wrote(n)`: the block came to n bytes).
    The blocks' sizes change no byte written: every row is formatted on its own."""
    done = [0, 0]  # rows, bytes

    def wrote(n: int) -> None:
        done[1] += n

    start = 0
    while start < rows:
        if done[0] == 0:
            size = min(WRITE_ROWS, FIRST_ROWS)
        else:
            size = max(1, min(WRITE_ROWS, WRITE_BYTES * done[0] // max(done[1], 1)))
        stop = min(rows, start + size)
        yield start, stop, wrote
        done[0] += stop - start
        start = stop


class _PartWriter:
    """Rows grouped in order into part files of at most `limit` bytes with the header, as `split_rows` groups
    them, each written (via a temporary file) as its rows arrive; a row too large for any part is a part of
    its own.

    The first part is written beside the object's single file (`first`) and moved into the parts' folder
    (`place_first`) only when a second part begins, so that an object written as one file never makes the
    folder: making and removing it waits milliseconds on the disk (scale 10: ~0.1 s of the building process's
    wall time over its objects)."""

    def __init__(self, bundle: Bundle, sobject: str, header: bytes, limit: int) -> None:
        self.bundle, self.sobject, self.header, self.limit = bundle, sobject, header, limit
        self.first = bundle.data_path(sobject).with_suffix(".csv.tmp")
        self.first_placed = False
        self.done: list[FileEntry] = []
        self._file: io.BufferedWriter | None = None
        self._hash = hashlib.sha256()
        self._size = 0
        self._rows = 0

    def _open(self) -> io.BufferedWriter:
        if len(self.done) + 1 > MAX_PARTS:
            raise BundleError(
                f"{self.sobject} would need more than {MAX_PARTS:,} parts of {self.limit:,} bytes; choose a "
                "larger part size.",
                sobject=self.sobject,
            )
        if self.done:
            self.place_first()
        path = self._tmp(len(self.done) + 1)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "wb")  # noqa: SIM115 (closed in _finish)
        self._file.write(self.header)
        self._hash = hashlib.sha256(self.header)
        self._size, self._rows = len(self.header), 0
        return self._file

    def add(self, rows: list[bytes]) -> None:
        pending: list[bytes] = []
        for row in rows:
            if self._file is None:
                self._open()
            elif self._rows and self._size + len(row) > self.limit:
                self._write(pending)
                pending = []
                self._finish()
                self._open()
            pending.append(row)
            self._size += len(row)
            self._rows += 1
        self._write(pending)

    def add_block(self, block: bytes, rows: int) -> bool:
        """Append `block` (`rows` whole rows) to the open part, opening the first one, when all of it fits
        there, where `add` would place each of its rows; False (nothing written) when it does not fit."""
        if self._file is not None and self._size + len(block) > self.limit:
            return False
        if self._file is None and (self.done or len(self.header) + len(block) > self.limit):
            return False
        if not block:
            return True
        if self._file is None:
            self._open()
        self._write([block])
        self._size += len(block)
        self._rows += rows
        return True

    def _write(self, rows: list[bytes]) -> None:
        if rows and self._file is not None:
            data = b"".join(rows)
            self._file.write(data)
            self._hash.update(data)

    def _tmp(self, number: int) -> Path:
        """Where part `number` is written."""
        if number == 1:
            return self.first
        path = self.bundle.root / part_rel(self.sobject, number)
        return path.with_suffix(path.suffix + ".tmp")

    def _finish(self) -> None:
        assert self._file is not None
        self._file.close()
        number = len(self.done) + 1
        rel = part_rel(self.sobject, number)
        if number > 1:
            os.replace(self._tmp(number), self.bundle.root / rel)
        self.done.append(FileEntry(rel, self._hash.hexdigest(), self._size, self._rows))
        self._file = None

    def place_first(self) -> None:
        """Move the finished first part into the parts' folder (once)."""
        if not self.first_placed:
            path = self.bundle.root / self.done[0].path
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.first, path)
            self.first_placed = True

    def close(self) -> list[FileEntry]:
        """Finish the last part (a header-only part when there were no rows); every part written (a lone
        first part is still at `first`: the caller places it, as the single file or by `place_first`)."""
        if self._file is None and not self.done:
            self._open()
        if self._file is not None:
            self._finish()
        return self.done


class Bundle:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.target: Path | None = None  # a staged bundle's final place (see `prepare` and `publish`)
        self.resumed: dict[str, Any] | None = None  # the staged manifest `prepare` resumes from
        # per parted object read by `read_raw`: (part file, first logical line, offset to the part's line)
        self._spans: dict[str, list[tuple[str, int, int]]] = {}
        self._cr: dict[tuple[str, int, int], bool] = {}  # (file, size, mtime) -> it holds a carriage return

    # -- layout ------------------------------------------------------------------------------------------

    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.json"

    def path(self, rel: str) -> Path:
        return self.root / rel

    def data_path(self, sobject: str) -> Path:
        return self.root / "data" / f"{sobject}.csv"

    @staticmethod
    def prepare(root: Path, force: bool, resume_key: str | None = None) -> Bundle:
        """A new bundle for `--out root`, staged in a folder beside it (see `staging_path`).

        Checks `root` first (`check_output_folder`; nothing is touched when it is refused), removes a stale
        staging folder an earlier, killed or failed build left, and returns the staged bundle: the build
        writes there and `publish()` swaps it in place of `root`, so until then the old bundle stays whole.

        `resume_key`: keep a staging folder whose manifest has this `/build/resume_key` (the same run) and at
        least one finished stage; `resumed` then holds its manifest (None when the build starts afresh).
        """
        target = check_output_folder(root, force)
        staging = staging_path(target)
        if staging.is_symlink() or (staging.exists() and not (staging / STAGING_MARK).is_file()):
            raise BundleError(
                f"{staging} exists and was not made by orgseed (no {STAGING_MARK} inside); orgseed stages a "
                "build there. Move it away or choose another --out. Nothing was changed.",
                file=str(staging),
            )
        if staging.exists() and resume_key is not None:
            staged = Bundle(staging)
            try:
                manifest = staged.read_manifest()
            except BundleError:
                manifest = None
            if (
                manifest is not None
                and manifest.get("build", {}).get("resume_key") == resume_key
                and manifest.get("stages")
            ):
                staged.target = target
                staged.resumed = manifest
                return staged
        if staging.exists():
            shutil.rmtree(staging)  # a stale staging folder: an earlier build of this --out did not finish
        staging.mkdir(parents=True)
        (staging / STAGING_MARK).write_text(
            json.dumps({"target": str(target), "pid": os.getpid()}) + "\n", encoding="utf-8"
        )
        for sub in ("data", "latent", "tasks", "reports"):
            (staging / sub).mkdir()
        bundle = Bundle(staging)
        bundle.target = target
        return bundle

    def publish(self) -> Path:
        """Swap a staged bundle (from `prepare`) in place of its target; return the target.

        The old bundle is renamed aside, the staged one renamed in, and only then the old one removed; what a
        rebuild keeps (`CARRIED`: the served org's certificate) is copied over first. The target is checked
        again (it may have changed during the build): something that is no longer an orgseed bundle is left
        as it is and the staged bundle stays where it is, named in the error.
        """
        target = self.target
        if target is None:
            return self.root
        if target.exists():
            reason = foreign_content(target)
            if reason is not None:
                raise BundleError(
                    f"{target} changed during the build and {reason}; it was left as it is. The new bundle is "
                    f"in {self.root}: move it where you want it.",
                    file=str(target),
                )
            for name in CARRIED:
                if (target / name).is_dir() and not (target / name).is_symlink():
                    if (self.root / name).exists():
                        shutil.rmtree(self.root / name)
                    shutil.copytree(target / name, self.root / name)
        (self.root / STAGING_MARK).unlink()
        if target.exists():
            old = target.parent / f".{target.name}{REPLACED_SUFFIX}"
            if old.exists() and not old.is_symlink():
                shutil.rmtree(old)  # left by a swap that was killed between its two renames
            os.rename(target, old)
            os.rename(self.root, target)
            shutil.rmtree(old)
        else:
            os.rename(self.root, target)
        self.root = target
        self.target = None
        return target

    # -- writing -----------------------------------------------------------------------------------------

    def _write_bytes(self, rel: str, data: bytes) -> FileEntry:
        return self._write_blocks(rel, [data])

    def _write_blocks(self, rel: str, blocks: Iterable[bytes]) -> FileEntry:
        """The file at `rel`, the blocks one after the other, written atomically (via a temporary file) as
        they come: its entry (hash and size of the whole)."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        digest = hashlib.sha256()
        size = 0
        with tmp.open("wb") as fh:
            for block in blocks:
                digest.update(block)
                size += len(block)
                fh.write(block)
        os.replace(tmp, path)
        return FileEntry(rel, digest.hexdigest(), size)

    def write_object(
        self,
        spec: ObjectSpec,
        frame: pd.DataFrame,
        part_bytes: int = PART_BYTES,
        fill: Callable[[pd.DataFrame, int], pd.DataFrame] | None = None,
    ) -> tuple[FileEntry, FileEntry | None]:
        """Write data/<Object>.csv — or, when it would pass `part_bytes`, data/<Object>/part-NNNNN.csv (see
        the module's docstring) — and, when the frame has latent columns, latent/<Object>.csv. The data entry
        of a parted object is its logical entry, with the parts in `parts`.

        Rows are formatted and written a block at a time (`_blocks`), so the CSV text of the whole object is never in
        memory; the bytes are those of formatting the whole frame at once. `fill(rows, start)`, when given,
        returns a block of rows (the frame's from row `start` on) with the fields the frame lacks: fields whose
        values are put in place only as they are written (generator/spill.py)."""
        # refuses missing or unknown fields before anything is written
        check_fields(spec, frame if fill is None else fill(frame.iloc[:0], 0))
        entry = self._write_data(spec, frame, part_bytes, fill)
        latent_entry = None
        if any(str(c).startswith("_") for c in frame.columns):
            latent_entry = self._write_latent(spec.name, frame)
        return entry, latent_entry

    def _write_latent(self, sobject: str, frame: pd.DataFrame) -> FileEntry:
        """latent/<Object>.csv, formatted and written a block of rows at a time (at scale 300 formatting
        EmailMessage's whole latent table at once held ~500 MB, the building process's peak)."""
        kinds = _latent_kinds(frame)

        def blocks() -> Iterator[bytes]:
            if not len(frame):  # the header alone
                yield "".join(_csv_lines(_latent_block(frame, kinds))).encode("utf-8")
            for start, stop, wrote in _blocks(len(frame)):
                lines = _csv_lines(_latent_block(frame.iloc[start:stop], kinds))
                block = "".join(lines if start == 0 else lines[1:]).encode("utf-8")  # the header once
                wrote(len(block))
                yield block

        entry = self._write_blocks(f"latent/{sobject}.csv", blocks())
        return FileEntry(entry.path, entry.sha256, entry.bytes, len(frame))

    def _write_data(
        self,
        spec: ObjectSpec,
        frame: pd.DataFrame,
        part_bytes: int,
        fill: Callable[[pd.DataFrame, int], pd.DataFrame] | None,
    ) -> FileEntry:
        sobject = spec.name
        single = self.data_path(sobject)
        folder = self.root / "data" / sobject
        # a staged folder may hold the other layout from an earlier attempt (orgseed's own files only)
        if folder.is_dir() and not folder.is_symlink():
            for old in folder.iterdir():
                if PART_RE.fullmatch(old.name) and old.is_file():
                    old.unlink()
        header = _csv_lines(pd.DataFrame(columns=[f.name for f in spec.fields]))[0].encode("utf-8")
        parts = _PartWriter(self, sobject, header, part_bytes)
        whole = hashlib.sha256(header)
        total = len(header)
        for start, stop, wrote in _blocks(len(frame)):
            rows = frame.iloc[start:stop]
            lines = _row_lines(spec, rows if fill is None else fill(rows, start))
            del rows
            block = "".join(lines).encode("utf-8")
            wrote(len(block))
            whole.update(block)
            total += len(block)
            if not parts.add_block(block, len(lines)):  # the block ends a part: placed row by row
                parts.add([line.encode("utf-8") for line in lines])
        written = parts.close()
        if total <= part_bytes:  # one part holding everything: the object's single file
            if single.is_symlink():
                single.unlink()
            os.replace(parts.first, single)
            if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
                folder.rmdir()
            return FileEntry(f"data/{sobject}.csv", written[0].sha256, written[0].bytes, len(frame))
        parts.place_first()
        if single.is_file() and not single.is_symlink():
            single.unlink()
        return FileEntry(f"data/{sobject}.csv", whole.hexdigest(), total, len(frame), tuple(written))

    def write_frame(self, rel: str, frame: pd.DataFrame) -> FileEntry:
        f = frame.copy()
        for c in f.columns:
            if f[c].dtype.kind == "M":
                f[c] = datetime_column(f[c])
            elif f[c].dtype.kind == "b":
                f[c] = bool_column(f[c])
        entry = self._write_bytes(rel, _to_csv_bytes(f))
        return FileEntry(entry.path, entry.sha256, entry.bytes, len(f))

    def write_json(self, rel: str, obj: Any) -> FileEntry:
        text = json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False, default=_json_default) + "\n"
        return self._write_bytes(rel, text.encode("utf-8"))

    def write_text(self, rel: str, text: str) -> FileEntry:
        """A UTF-8 text file of the bundle (e.g. a report page), written atomically."""
        return self._write_bytes(rel, text.encode("utf-8"))

    def write_jsonl(self, rel: str, rows: list[Any]) -> FileEntry:
        text = "".join(json.dumps(r, ensure_ascii=False, default=_json_default) + "\n" for r in rows)
        return self._write_bytes(rel, text.encode("utf-8"))

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self.write_json("manifest.json", manifest)

    # -- reading -----------------------------------------------------------------------------------------

    def read_manifest(self) -> dict[str, Any]:
        path = self.manifest_path
        if not path.exists() and not path.is_symlink():
            raise BundleError(
                f"{path} is missing: {self.root} is not an orgseed bundle (build one with `orgseed build`).",
                file=str(path),
            )
        text = read_text_regular(path, str(path), root=self.root, limit=MAX_MANIFEST_BYTES)
        manifest = load_json_bounded(text, str(path))
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise BundleError(
                f"{path}: /format must be `{FORMAT}`; this is not an orgseed manifest.", file=str(path)
            )
        seed = manifest.get("seed")
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
            raise BundleError(
                f"{path}: /seed must be an integer from 0 to 2**63 - 1 (got {str(seed)[:40]}); this manifest was "
                "not written by orgseed. Rebuild the bundle.",
                file=str(path),
            )
        if manifest.get("format_version") != FORMAT_VERSION:
            raise BundleError(
                f"{path}: /format_version is {manifest.get('format_version')!r}; this orgseed reads version "
                f"{FORMAT_VERSION}. Rebuild the bundle with this version.",
                file=str(path),
            )
        return manifest

    def verify_hashes(self, manifest: dict[str, Any] | None = None) -> list[str]:
        """Problems with the files the manifest lists (missing or changed), one sentence each."""
        manifest = manifest or self.read_manifest()
        problems = []
        files = manifest.get("files", {})
        for rel, digest in sorted(files.items() if isinstance(files, dict) else []):
            path = self.root / str(rel)
            if not path.exists():
                problems.append(f"{path} is listed in the manifest but missing.")
                continue
            try:
                actual = sha256_file(path, root=self.root)
            except BundleError as exc:
                problems.append(str(exc))
                continue
            if actual != digest:
                problems.append(
                    f"{path} does not match its SHA-256 in manifest.json (the file changed after the build); "
                    "rebuild the bundle or restore the file."
                )
        return problems

    def _listed_parts(self, sobject: str) -> int | None:
        """How many parts the manifest lists for `sobject` (0: it lists the single file; None: it says nothing
        readable about the object)."""
        try:
            manifest = self.read_manifest()
        except BundleError:
            return None
        objects = manifest.get("objects")
        entry = objects.get(sobject) if isinstance(objects, dict) else None
        if not isinstance(entry, dict):
            return None
        parts = entry.get("parts")
        if parts is None:
            return 0
        return len(parts) if isinstance(parts, list) else None

    def data_files(self, sobject: str) -> list[Path]:
        """The files holding `sobject`'s records, in record order: [data/<Object>.csv], or its parts.

        BundleError naming the file when the layout is broken: no data, both layouts present, a stray file
        among the parts, a part missing (a gap in the numbers, or fewer parts than the manifest lists), or a
        layout other than the one the manifest lists."""
        single = self.data_path(sobject)
        folder = self.root / "data" / sobject
        has_single = single.exists() or single.is_symlink()
        has_folder = folder.exists() or folder.is_symlink()
        listed = self._listed_parts(sobject)
        if has_single and has_folder:
            raise BundleError(
                f"{single} and {folder}/ both hold {sobject}'s records; a bundle holds an object in one layout "
                f"(one file, or parts). Remove the one manifest.json does not list under /objects/{sobject}, "
                "or rebuild the bundle.",
                file=str(folder if listed == 0 else single),
                sobject=sobject,
            )
        if not has_folder:
            if listed:
                missing = self.root / part_rel(sobject, 1)
                raise BundleError(
                    f"{missing} is missing: manifest.json lists {listed} part(s) of {sobject} under "
                    f"/objects/{sobject}/parts. Restore the parts or rebuild the bundle.",
                    file=str(missing),
                    sobject=sobject,
                )
            if not has_single:
                raise BundleError(
                    f"{single} is missing; the bundle has no data for {sobject}.", file=str(single)
                )
            return [single]
        if folder.is_symlink() or not folder.is_dir():
            raise BundleError(
                f"{folder} is not a folder of parts; orgseed writes {sobject}'s parts as "
                f"{folder}/part-00001.csv, .... Rebuild the bundle.",
                file=str(folder),
                sobject=sobject,
            )
        if listed == 0:
            raise BundleError(
                f"{folder}/ holds parts of {sobject} but manifest.json lists the single file data/{sobject}.csv "
                f"under /objects/{sobject}. Remove the folder or rebuild the bundle.",
                file=str(folder),
                sobject=sobject,
            )
        numbers: dict[int, Path] = {}
        for entry in sorted(folder.iterdir()):
            m = PART_RE.fullmatch(entry.name)
            if m is None or int(m.group(1)) == 0:
                raise BundleError(
                    f"{entry} is not a part of {sobject} (parts are named part-00001.csv, part-00002.csv, ... "
                    "from 1); a bundle's part folders hold nothing else. Move it away or rebuild the bundle.",
                    file=str(entry),
                    sobject=sobject,
                )
            numbers[int(m.group(1))] = entry
        expected = listed if listed is not None else max(numbers, default=0)
        for n in range(1, expected + 1):
            if n not in numbers:
                missing = self.root / part_rel(sobject, n)
                raise BundleError(
                    f"{missing} is missing ({sobject} has {expected} part(s)"
                    + (" in manifest.json" if listed is not None else "")
                    + "); restore it or rebuild the bundle.",
                    file=str(missing),
                    sobject=sobject,
                )
        stray = sorted(n for n in numbers if n > expected)
        if stray:
            raise BundleError(
                f"{numbers[stray[0]]} is a stray part: manifest.json lists {expected} part(s) of {sobject} under "
                f"/objects/{sobject}/parts. Move it away or rebuild the bundle.",
                file=str(numbers[stray[0]]),
                sobject=sobject,
            )
        if not numbers:
            raise BundleError(
                f"{folder}/ holds no parts; the bundle has no data for {sobject}. Rebuild the bundle.",
                file=str(folder),
                sobject=sobject,
            )
        return [numbers[n] for n in range(1, expected + 1)]

    def has_data(self, sobject: str) -> bool:
        """Whether the bundle holds records of `sobject` in either layout (not whether they are readable)."""
        single = self.data_path(sobject)
        return single.exists() or single.is_symlink() or (self.root / "data" / sobject).exists()

    def locate(self, sobject: str, line: int) -> tuple[str, int]:
        """The file (relative to the root) and line of line `line` of `sobject`'s records as `read_raw` numbered
        them: for a single file, that file and line; for parts, the part holding it and its line there."""
        spans = self._spans.get(sobject)
        if not spans:
            return f"data/{sobject}.csv", line
        rel, _first, offset = spans[0]
        for candidate in spans:
            if candidate[1] <= line:
                rel, _first, offset = candidate
        return rel, line - offset

    def read_raw(
        self, sobject: str, spec: ObjectSpec | None = None, columns: Collection[str] | None = None
    ) -> pd.DataFrame:
        """data/<Object>.csv (or its parts, in order) as strings (None for empty); a `_line` column holds each
        row's line number. For parts, lines count as if the parts were one file (the header once): `locate`
        turns such a line into the part and its line. With `columns`, only those columns (and `_line`) are
        kept; every cell is read and checked all the same.

        Raises BundleError naming the file and line when the CSV is malformed: a row with the wrong number
        of cells, an unterminated quote, or a header that differs from the model; or naming the file when the
        layout is broken (`data_files`).
        """
        paths = self.data_files(sobject)
        if len(paths) == 1 and paths[0] == self.data_path(sobject):
            self._spans.pop(sobject, None)
            check = self._header_check(sobject, spec, paths[0])
            single = read_csv_lines(paths[0], str(paths[0]), check, self.root, columns)
            single.attrs = {}
            return single
        frames = []
        spans: list[tuple[str, int, int]] = []
        offset = 0
        first: list[tuple[Path, list[str]]] = []  # the first part and its header
        for path in paths:
            check = self._header_check(sobject, spec, path, first)
            frame = read_csv_lines(path, str(path), check, self.root, columns)
            spans.append((path.relative_to(self.root).as_posix(), offset + 2, offset))
            frame["_line"] = frame["_line"] + offset
            offset += int(frame.attrs.get("lines", 1)) - 1
            frames.append(frame)
        self._spans[sobject] = spans
        out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        out.attrs = {}
        return out

    def iter_raw(
        self,
        sobject: str,
        spec: ObjectSpec | None = None,
        rows: int | None = None,
        columns: Collection[str] | None = None,
        compact: Collection[str] | None = None,
    ) -> Iterator[pd.DataFrame]:
        """`read_raw` a block of at most `rows` rows at a time, in record order (a block never spans two
        parts), so a reader that looks at one record at a time holds one block, not the object. With
        `columns`, a block holds only those columns (and `_line`); every cell is read and checked all the
        same. With `compact`, only those columns' repeated values share one string object (the columns a
        reader keeps beyond their block: the others' would be kept alive for nothing). The same lines and
        the same BundleError as `read_raw`, raised when the block holding the fault is reached."""
        paths = self.data_files(sobject)
        single = len(paths) == 1 and paths[0] == self.data_path(sobject)
        if single:
            self._spans.pop(sobject, None)
        spans: list[tuple[str, int, int]] = []
        offset = 0
        first: list[tuple[Path, list[str]]] = []  # the first part and its header
        for path in paths:
            check = self._header_check(sobject, spec, path, None if single else first)
            if not single:
                spans.append((path.relative_to(self.root).as_posix(), offset + 2, offset))
                self._spans[sobject] = list(spans)
            blocks = CsvBlocks(path, str(path), check, self.root, columns, rows, compact)
            for frame in blocks.frames():
                if offset:
                    frame["_line"] = frame["_line"] + offset
                yield frame
            offset += max(blocks.lines, 1) - 1

    def _header_check(
        self,
        sobject: str,
        spec: ObjectSpec | None,
        path: Path,
        first: list[tuple[Path, list[str]]] | None = None,
    ) -> Callable[[list[str]], None]:
        """The check of `path`'s header: the model's columns in order (with `spec`), and for a part the first
        part's header (`first` holds that part and its header once it was read)."""

        def check(header: list[str]) -> None:
            if spec is not None and header != spec.field_names:
                raise mismatch(header, spec.field_names)
            if first is None:
                return
            if not first:
                first.append((path, header))
            elif header != first[0][1]:
                raise BundleError(
                    f"{path}:1: the header differs from the first part's ({first[0][0]}); every part of an "
                    "object has the same header. Rebuild the bundle.",
                    file=str(path),
                    line=1,
                )

        def mismatch(header: list[str], model: list[str]) -> BundleError:
            missing = [f for f in model if f not in header]
            extra = [h for h in header if h not in model]
            detail = []
            if missing:
                detail.append(f"missing column(s) {', '.join(missing)}")
            if extra:
                detail.append(f"unknown column(s) {', '.join(extra)}")
            if not detail:
                detail.append("columns are out of model order")
            return BundleError(
                f"{path}:1: header does not match the model of {sobject}: {'; '.join(detail)}.",
                file=str(path),
                line=1,
            )

        return check

    def read_object(self, spec: ObjectSpec) -> pd.DataFrame:
        """data/<Object>.csv with typed columns (datetime64, bool, float), for analysis."""
        raw = self.read_raw(spec.name, spec)
        return type_frame(spec, raw)

    def read_columns(self, sobject: str, columns: list[str] | tuple[str, ...]) -> pd.DataFrame:
        """Only `columns` of `sobject`'s records (the file or its parts, in order), as `read_raw` gives them
        (strings, None for empty; no `_line`), parsed by pandas' C reader: for readers that need a few columns
        of a large object (the task builders and checks). Columns the header lacks are left out.

        A file the C reader cannot parse is read once more with `read_raw`, whose BundleError names the file
        and line."""
        frames = list(self.iter_columns(sobject, columns))
        if not frames:
            return pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]

    def iter_columns(
        self,
        sobject: str,
        columns: list[str] | tuple[str, ...],
        rows: int | None = None,
        share: bool = False,
    ) -> Iterator[pd.DataFrame]:
        """`read_columns` in consecutive frames of at most `rows` rows (None: one frame per file), in record
        order, so a reader holds one frame at a time.

        `share`, for a reader that keeps what it reads: in a column that repeats its values (picklists,
        owners, the lookups of a small object; decided on its first COMPACT_SAMPLE cells, as `_compact`
        decides), equal cells are one string object across frames and files, as `read_raw` makes them.
        The C reader makes a new string per cell: at scale 300 the task builders kept ~400,000 copies of
        "Owner Assignment" and as many of the agents' ids."""
        shared = {c: _Column() for c in columns} if share else None
        for path in self.data_files(sobject):
            header = self._header(path)
            wanted = [c for c in columns if c in header]
            if self._holds_cr(path):
                yield from self._csv_module_columns(path, wanted, rows, shared)
                continue
            try:
                reader = pd.read_csv(
                    path,
                    usecols=wanted,
                    dtype=str,
                    keep_default_na=False,
                    na_filter=False,
                    encoding="utf-8",
                    engine="c",
                    chunksize=rows,
                )
                frames = reader if rows is not None else [reader]
                for frame in frames:
                    if frame.isna().to_numpy().any():  # a row with fewer cells than the header
                        raise ValueError("a row has fewer cells than the header")
                    out = frame[wanted]
                    if shared is None:
                        yield out.astype(object).where(out != "", None)
                    else:
                        cells = {c: shared[c].block(out[c].to_numpy(dtype=object)) for c in wanted}
                        yield pd.DataFrame(cells, index=out.index, dtype=object, copy=False)
            except (ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError is a ValueError
                self.read_raw(sobject)  # raises the BundleError naming the file and line
                raise BundleError(f"{path}: unreadable CSV ({exc}).", file=str(path)) from exc

    def _header(self, path: Path) -> list[str]:
        """The first row of a CSV of the bundle, read only from a regular file inside it (`open_regular`: a FIFO,
        a device, a folder or a link leaving the bundle is refused with a BundleError, not read from), and
        refused with a BundleError naming the byte when it is not UTF-8."""
        with open_regular(path, root=self.root) as fh:
            try:
                return next(csv.reader(utf8_lines(fh, str(path))), [])
            except csv.Error as exc:
                raise BundleError(
                    f"{path}:1: unreadable header ({exc}); the first row must name the columns. Rebuild the bundle "
                    "or fix the row.",
                    file=str(path),
                    line=1,
                ) from exc

    def _holds_cr(self, path: Path) -> bool:
        """Whether `path` holds a carriage return anywhere (a CRLF file, a quoted cell holding one, or a bare
        one a hand edit left). pandas' C reader ends a row at any carriage return, even inside a cell written
        bare, and drops one ending a cell: such a file is read by the csv module instead, as `read_raw`
        reads it. One pass over the bytes, ~1.5 GB/s, remembered per file while its size and time hold."""
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        if key not in self._cr:
            found = False
            buf = bytearray(CR_SCAN_BYTES)  # read into, one buffer: no 16 MB allocation per chunk
            with open_regular(path, root=self.root) as fh:
                while n := fh.readinto(buf):
                    if buf.find(b"\r", 0, n) >= 0:
                        found = True
                        break
            self._cr[key] = found
        return self._cr[key]

    def _csv_module_columns(
        self, path: Path, wanted: list[str], rows: int | None, shared: dict[str, _Column] | None
    ) -> Iterator[pd.DataFrame]:
        """`iter_columns` of one file, read by the csv module (`CsvBlocks`, as `read_raw` reads it, with its
        BundleError naming the line of a malformed row): the same frames the C reader gives for a file it
        reads right (strings, None for empty; `rows` rows a frame, or one frame for the file; the index
        counting the file's rows from 0)."""
        blocks = CsvBlocks(
            path, str(path), None, self.root, wanted, rows=rows, compact=() if shared is None else None
        )
        if shared is not None:
            blocks.shared = shared
        held: list[list[np.ndarray]] = []  # with `rows` None: the file's blocks, joined at its end
        start = 0  # the rows given before this frame's

        def frame(arrays: list[np.ndarray], n: int) -> pd.DataFrame:
            cells = dict(zip(blocks.kept, arrays, strict=True))
            index = pd.RangeIndex(start, start + n)
            return pd.DataFrame({c: cells[c] for c in wanted}, index=index, dtype=object, copy=False)

        for arrays, lines in blocks.arrays():
            if rows is None:
                held.append(arrays)
            else:
                yield frame(arrays, len(lines))
            start += len(lines)
        if rows is None or start == 0:  # the file's one frame (pandas gives one for a header alone too)
            total, start = start, 0
            columns = [_joined_arrays(list(column)) for column in zip(*held, strict=True)] if held else []
            yield frame(columns or [np.asarray([], dtype=object) for _ in blocks.kept], total)

    def read_latent(self, name: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """latent/<name>.csv as strings, None for empty; with `columns`, only those the header has."""
        path = self.root / "latent" / f"{name}.csv"
        if not path.exists():
            raise BundleError(f"{path} is missing.", file=str(path))
        usecols = None
        if columns is not None:
            usecols = [c for c in columns if c in self._header(path)]
        if self._holds_cr(path):  # read as `read_raw` reads (see `_holds_cr`)
            strict = read_csv_lines(path, str(path), root=self.root, columns=usecols).drop(columns="_line")
            return strict if usecols is None else strict[usecols]
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, usecols=usecols)
        return (frame if usecols is None else frame[usecols]).replace("", None)


def type_frame(spec: ObjectSpec, raw: pd.DataFrame) -> pd.DataFrame:
    out = raw.copy()
    for f in spec.fields:
        if f.name not in out.columns:
            continue
        col = out[f.name]
        if f.type == "datetime":
            out[f.name] = pd.to_datetime(
                col, format="%Y-%m-%dT%H:%M:%S.%f%z", errors="coerce", utc=True
            ).dt.tz_localize(None)
        elif f.type == "date":
            out[f.name] = pd.to_datetime(col, format="%Y-%m-%d", errors="coerce")
        elif f.type == "boolean":
            out[f.name] = col.map({"true": True, "false": False})
        elif f.type in ("currency", "double", "int"):
            out[f.name] = pd.to_numeric(col, errors="coerce")
    return out


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def new_manifest(
    profile: dict[str, Any], seed: int, scale: float, writer: dict[str, Any], model: OrgModel
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "tool": {"name": "orgseed", "version": TOOL_VERSION},
        "status": "in_progress",
        "profile": profile,
        "seed": seed,
        "scale": scale,
        "writer": writer,
        "objects": {},
        "files": {},
        "data_sha256": None,
        "validated": None,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "timings": {},
    }


def read_csv_lines(
    path: Path,
    label: str,
    check_header: Callable[[list[str]], None] | None = None,
    root: Path | None = None,
    columns: Collection[str] | None = None,
) -> pd.DataFrame:
    """A CSV as strings (None for empty) with a `_line` column holding each row's first line number.

    Raises BundleError naming `label` (the file as the user knows it) and the line when the file is not UTF-8,
    has no header, has a malformed row (unclosed quote, text after a closing quote) or a row whose cell count
    differs from the header's. `check_header` may reject the header before any row is read. With `columns`,
    the frame holds only the header's columns named there (and `_line`): every row is read and checked all
    the same, the other columns' cells are not kept.
    """
    blocks = CsvBlocks(path, label, check_header, root, columns)
    # each column's cells are kept as arrays a block of rows at a time and joined once at the end, so the
    # rows as lists of strings (several times the file's size) are never all held at once
    arrays: list[list[np.ndarray]] = []
    lines: list[np.ndarray] = []
    for cells, block_lines in blocks.arrays():
        if not arrays:
            arrays = [[] for _ in cells]
        for held, column in zip(arrays, cells, strict=True):
            held.append(column)
        lines.append(block_lines)
    names = blocks.kept
    joined = [_joined_arrays(held) for held in arrays] if arrays else [_joined_arrays([]) for _ in names]
    # the columns as they are, one block each: not copied into one two-dimensional block beside them (at
    # scale 1,000, OrderItem's five kept columns: 285 MB of pointers, copied at once)
    frame = pd.DataFrame({i: column for i, column in enumerate(joined)}, dtype=object, copy=False)
    del joined
    frame.columns = pd.Index(names, dtype=object)
    frame["_line"] = _joined_arrays(lines, np.int64)
    frame.attrs["lines"] = blocks.lines  # the file's physical lines (how parts' lines are numbered on)
    return frame


def _joined_arrays(held: list[np.ndarray], dtype: Any = object) -> np.ndarray:
    if not held:
        return np.asarray([], dtype=dtype)
    out = np.concatenate(held) if len(held) > 1 else held[0]
    held.clear()
    return out


class CsvBlocks:
    """A CSV's rows a block at a time, checked as `read_csv_lines` checks them: `frames()` gives each block as
    a frame of strings (None for empty) with its `_line` column; `arrays()` gives its kept columns' arrays and
    its lines. Equal values of a repetitive column share one string object across blocks (`_Column`); with
    `compact`, only those columns' values do (a reader that lets the others go with their block would only
    keep their values alive, scattered among its own). `lines` is the file's physical line count once every
    block was read; `kept` the columns kept."""

    def __init__(
        self,
        path: Path,
        label: str,
        check_header: Callable[[list[str]], None] | None = None,
        root: Path | None = None,
        columns: Collection[str] | None = None,
        rows: int | None = None,
        compact: Collection[str] | None = None,
    ) -> None:
        self.path, self.label, self.check_header, self.root = path, label, check_header, root
        self.columns = columns
        self.compact = compact
        self.rows = rows or READ_BLOCK
        self.kept: list[str] = []
        self.lines = 0
        # the columns' `_Column`s by name, shared with another read (`Bundle.iter_columns` across its files)
        self.shared: dict[str, _Column] | None = None

    def frames(self) -> Iterator[pd.DataFrame]:
        for cells, lines in self.arrays():
            frame = pd.DataFrame({i: column for i, column in enumerate(cells)}, dtype=object)
            frame.columns = pd.Index(self.kept, dtype=object)
            frame["_line"] = lines
            yield frame

    def arrays(self) -> Iterator[tuple[list[np.ndarray], np.ndarray]]:
        label = self.label
        # the file is decoded and split into lines a chunk at a time: neither its bytes nor its text are held
        # whole beside the rows read from it
        with open_regular(self.path, root=self.root) as fh:
            reader = csv.reader(utf8_lines(fh, label), strict=True)
            try:
                header = next(reader)
            except StopIteration:
                raise BundleError(
                    f"{label}:1: the file is empty; expected a header row.", file=label, line=1
                ) from None
            except csv.Error as exc:
                raise BundleError(
                    f"{label}:1: unreadable header ({exc}); the first row must name the columns. Rebuild the bundle "
                    "or fix the row.",
                    file=label,
                    line=1,
                ) from exc
            if self.check_header is not None:
                self.check_header(header)
            wanted = self.columns
            share = self.compact
            built = [
                None
                if wanted is not None and name not in wanted
                else self.shared[name]
                if self.shared is not None
                else _Column(share is None or name in share)
                for name in header
            ]
            self.kept = [name for name, column in zip(header, built, strict=True) if column is not None]
            rows: list[list[str]] = []
            lines: list[int] = []
            width = len(header)

            def block() -> tuple[list[np.ndarray], np.ndarray]:
                # (called with at least one row: a file without rows yields no block)
                cells = [
                    column.block(values)
                    for column, values in zip(built, zip(*rows, strict=True), strict=True)
                    if column is not None
                ]
                out = (cells, np.asarray(lines, dtype=np.int64))
                rows.clear()
                lines.clear()
                return out

            end = reader.line_num  # the line the last row read ends on
            try:
                for row in reader:
                    if len(row) != width:
                        raise BundleError(
                            f"{label}:{end + 1}: row has {len(row)} cells but the header has {width}; the row "
                            "is truncated or has an unquoted comma. Rebuild the bundle or fix the row.",
                            file=label,
                            line=end + 1,
                        )
                    rows.append(row)
                    lines.append(end + 1)
                    end = reader.line_num
                    if len(rows) >= self.rows:
                        yield block()
            except csv.Error as exc:
                raise BundleError(
                    f"{label}:{end + 1}: malformed CSV ({exc}); the row is truncated or has an unclosed quote.",
                    file=label,
                    line=end + 1,
                ) from exc
            if rows:
                yield block()
            self.lines = reader.line_num


LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")
# the line boundaries `str.splitlines` knows besides \n, \r\n and \r
OTHER_BREAKS = "\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def lines_of(text: str) -> list[str]:
    """The lines of `text` as `io.StringIO(text, newline="")` gives them (ending at \\n, \\r\\n or \\r, the
    ending kept), without the copy of the whole text StringIO makes first: `str.splitlines` (one C pass)
    when the text holds none of the other characters it breaks lines at, else a scan for the three. The
    other characters are looked for one at a time (`in`: a fast search each, a fraction of the time of one
    scan for a character class)."""
    if not any(c in text for c in OTHER_BREAKS):
        return text.splitlines(keepends=True)
    return [m.group() for m in LINE.finditer(text)]


READ_CHUNK = 1 << 20  # bytes decoded at a time by `utf8_lines`
CR_SCAN_BYTES = 1 << 20  # bytes searched at a time for a carriage return (`Bundle._holds_cr`)


def utf8_lines(fh: IO[bytes], label: str, chunk: int = READ_CHUNK) -> Iterator[str]:
    """The lines of a UTF-8 file as `lines_of` gives them from its whole text, decoded `chunk` bytes at a time
    (so the file's bytes and text are never held whole). Raises the BundleError `read_text_regular` raises,
    with the same byte position, when the file is not UTF-8. The lines are handed on a chunk's list at a time
    (`chain`, in C: no generator step per line)."""
    return itertools.chain.from_iterable(_utf8_line_lists(fh, label, chunk))


def _utf8_line_lists(fh: IO[bytes], label: str, chunk: int) -> Iterator[list[str]]:
    """`utf8_lines`, as the list of lines of each chunk."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    fed = 0  # bytes given to the decoder so far
    carry = ""  # the text after the last complete line
    while True:
        data = fh.read(chunk)
        final = not data
        held = len(decoder.getstate()[0])  # bytes of an unfinished character from the previous chunk
        try:
            text = decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            at = fed - held + exc.start
            raise BundleError(f"{label}: not UTF-8 ({exc.reason} at byte {at}).", file=label) from exc
        fed += len(data)
        buf = carry + text
        if final:
            yield lines_of(buf)
            return
        # a \r at the very end may be the first half of a \r\n: it waits for the next chunk
        limit = len(buf) - 1 if buf.endswith("\r") else len(buf)
        end = max(buf.rfind("\n", 0, limit), buf.rfind("\r", 0, limit))
        yield lines_of(buf[: end + 1])
        carry = buf[end + 1 :]


READ_BLOCK = 4096  # rows parsed into cells before they are added to the column arrays


class _Column:
    """One column's cells as `_compact` makes them, a block at a time: equal values share one string object
    across blocks too, and whether the column is compacted at all is decided on its first COMPACT_SAMPLE
    cells, as `_compact` decides it on the whole column."""

    def __init__(self, compact: bool = True) -> None:
        self.shared: dict[str, str] | None = None  # value → its one string object; None: not compacted
        self.decided = not compact

    def block(self, cells: Sequence[str]) -> np.ndarray:
        block = np.asarray(cells, dtype=object)
        if not self.decided:
            self.decided = True
            if _repeats(block[:COMPACT_SAMPLE].tolist()):
                self.shared = {}
        if self.shared is None:
            block[block == ""] = None
            return block
        # the cells are all strings, so no cell is missing: the NA sentinel never appears (and the cells are
        # not scanned for missing values first, as use_na_sentinel=False does)
        codes, uniques = pd.factorize(block)
        values = np.asarray([self.shared.setdefault(v, v) for v in uniques.tolist()], dtype=object)
        values[values == ""] = None
        return values.take(codes)


class PackedColumn:
    """A column of cells (strings, None for empty) kept a block at a time as one joined text and the cells'
    lengths, not as a string object per cell, until `array` makes them.

    A reader that keeps a few columns of an object it reads a block at a time would otherwise keep a few
    small strings of every block, scattered among the many it lets go: each pins the allocator's pool and
    arena it sits in, and the memory of the cells let go is never given back (at scale 300 ~700 MB beside
    a ~280 MB frame of EmailMessage's ids, dates and lookups). Made at the end, once the blocks are gone,
    the cells sit together. Equal values share one string object when the column repeats (decided on its
    first COMPACT_SAMPLE cells, as `_compact` decides)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.lengths: list[np.ndarray] = []  # a cell's length, -1 for None

    def __len__(self) -> int:
        return sum(len(n) for n in self.lengths)

    def add(self, cells: Sequence[str | None]) -> None:
        present = [c for c in cells if c is not None]
        self.texts.append("".join(present))
        lengths = np.full(len(cells), -1, dtype=np.int64)
        if present:
            where = np.flatnonzero(np.fromiter((c is not None for c in cells), dtype=bool, count=len(cells)))
            lengths[where] = np.fromiter(map(len, present), dtype=np.int64, count=len(present))
        self.lengths.append(lengths)

    def array(self) -> np.ndarray:
        out = np.empty(len(self), dtype=object)
        shared: dict[str, str] | None = None
        decided = False
        at = 0
        self.texts.reverse()
        self.lengths.reverse()
        while self.texts:
            text, lengths = self.texts.pop(), self.lengths.pop()
            starts = np.cumsum(np.maximum(lengths, 0)) - np.maximum(lengths, 0)
            cells: list[str | None] = [
                None if n < 0 else text[a : a + n]
                for a, n in zip(starts.tolist(), lengths.tolist(), strict=True)
            ]
            if not decided:
                decided = True
                if _repeats(cells[:COMPACT_SAMPLE]):
                    shared = {}
            if shared is not None:
                cells = [None if c is None else shared.setdefault(c, c) for c in cells]
            out[at : at + len(cells)] = cells
            at += len(cells)
        return out


def _compact(column: Sequence[str]) -> np.ndarray:
    """One column's cells as an object array, None for empty, equal values sharing one string object.

    A column of lookups, picklist values or dates repeats a few values many times; the CSV reader makes a new
    string per cell, so sharing them keeps a large object's frame a fraction of its size. A column whose first
    COMPACT_SAMPLE cells are nearly all distinct (ids, free text) has nothing to share and is not hashed."""
    cells = np.asarray(column, dtype=object)
    if not _repeats(cells[:COMPACT_SAMPLE].tolist()):
        cells[cells == ""] = None
        return cells
    codes, uniques = pd.factorize(cells, use_na_sentinel=False)
    values = np.asarray(uniques, dtype=object)
    values[values == ""] = None
    return values.take(codes)


COMPACT_SAMPLE = 1024


def _repeats(sample: Sequence[Any]) -> bool:
    """Whether a column whose first cells are `sample` (up to COMPACT_SAMPLE) repeats its values enough to
    share them: not when they are nearly all distinct (ids, free text)."""
    return not (len(sample) >= 64 and len(set(sample)) > 0.9 * len(sample))
