"""Reading a bundle for validation, turning every way it can be unreadable into a located finding.

`load_bundle` never raises for a broken bundle: a missing manifest, a changed or missing file, a CSV that
cannot be parsed (with its file and line), an unreadable JSON file, or a profile that cannot be found each
become a `fatal` finding, and the checks that need the broken input are skipped (and listed as skipped).
Everything that can be read is still checked.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from orgs.bundle import (
    Bundle,
    BundleError,
    CsvBlocks,
    load_json_bounded,
    read_csv_lines,
    read_text_regular,
    sha256_file,
)
from schemas.errors import OrgseedError
from schemas.model import ObjectSpec, OrgModel, load_model
from schemas.profile import Profile, load_profile
from validators.findings import Finding, finding

LATENT_OBJECTS = ("Case", "EmailMessage", "Issue__c", "Knowledge__kav")
# the latent columns the content checks read (validators/text.py); the others' cells are not kept when the file
# is read (at scale 30 latent/Case.csv and latent/EmailMessage.csv held ~40 MB through validation, ~8 MB kept)
LATENT_COLUMNS: dict[str, tuple[str, ...]] = {
    "Case": ("Id", "_offer_channel", "_offer_remedy", "_violation", "_days_since_purchase", "_line"),
    "EmailMessage": ("Id", "_kind", "_line"),
    "Issue__c": ("Id", "_issue_key", "_line"),
    "Knowledge__kav": ("Id", "_kind", "_subject", "_line"),
}
# the latent tables of which the checks read only the ids whose last row has a value (column, value): only
# those rows are kept. EmailMessage's say which emails carry their case's offer (text._messages): at scale 300,
# 171,399 of its 970,200 rows (the latent tables read for the offers step were ~117 MB of its ~284 MB, most of
# it this table's ids)
LATENT_LAST_ROWS: dict[str, tuple[str, str]] = {"EmailMessage": ("_kind", "agent_offer")}
POLICIES = "latent/world/policies.json"
_DATA_FILE = re.compile(r"data/([^/]+)\.csv")


@dataclass
class BundleData:
    """What the checks read: raw data frames (strings, None for empty, `_line` = CSV line), latent tables."""

    root: Path
    model: OrgModel
    manifest: dict[str, Any] | None = None
    profile: Profile | None = None
    raw: dict[str, pd.DataFrame] = field(default_factory=dict)
    latent: dict[str, pd.DataFrame] = field(default_factory=dict)
    # the latent tables tried (their file exists) and those read: a staged run reads each when a step first
    # needs it and lets it go after the last, so `latent` alone does not say which could be read
    latent_tried: set[str] = field(default_factory=set)
    latent_read: set[str] = field(default_factory=set)
    policies: dict[str, Any] | None = None
    problems: list[Finding] = field(default_factory=list)
    bundle: Bundle | None = None  # what read the data: it knows which part holds a line of a parted object

    @staticmethod
    def data_file(sobject: str) -> str:
        return f"data/{sobject}.csv"

    def relocate(self, f: Finding) -> Finding:
        """`f` with a line of a parted object's records (`data/<Object>.csv:N`, lines counted as if the parts
        were one file) pointed at the part holding it and the line there."""
        m = _DATA_FILE.fullmatch(f.file or "")
        if m is None or f.line is None or self.bundle is None:
            return f
        rel, line = self.bundle.locate(m.group(1), int(f.line))
        return f if rel == f.file else replace(f, file=rel, line=line)

    @staticmethod
    def latent_file(sobject: str) -> str:
        return f"latent/{sobject}.csv"

    def has(self, *objects: str) -> bool:
        return all(o in self.raw for o in objects)

    @property
    def records(self) -> int:
        return sum(len(f) for f in self.raw.values())


def load_bundle(
    root: Path | str,
    profile: str | Profile | None = None,
    model: OrgModel | None = None,
    objects: bool = True,
    latent: bool = True,
) -> BundleData:
    """The bundle at `root` as the checks read it; with `objects=False` everything but the objects' data
    (read them one at a time with `read_object`); with `latent=False` everything but the latent tables (read
    them with `read_latent`)."""
    root = Path(root)
    data = BundleData(root=root, model=model or load_model(), bundle=Bundle(root))
    read_bundle_files(data, profile, objects, latent)
    return data


def read_bundle_files(
    data: BundleData, profile: str | Profile | None = None, objects: bool = False, latent: bool = True
) -> None:
    """Read into `data` (made for its root, model and bundle) the manifest, checking the files it lists, the
    profile, the objects (with `objects`), the latent tables (with `latent`) and the policies."""
    root, bundle = data.root, data.bundle
    assert bundle is not None
    try:
        data.manifest = bundle.read_manifest()
    except BundleError as exc:
        data.problems.append(
            finding("bundle.manifest", str(exc), file="manifest.json", line=getattr(exc, "line", None))
        )
        return
    data.problems.extend(_check_files(root, data.manifest))
    data.profile = _resolve_profile(data, profile)
    if objects:
        for spec in data.model:
            frame = read_object(data, bundle, spec)
            if frame is not None:
                data.raw[spec.name] = frame
    if latent:
        read_latent(data)
    read_policies(data)


def read_latent(data: BundleData, names: Collection[str] = LATENT_OBJECTS) -> list[str]:
    """Read into `data.latent` the latent tables of `names` not tried yet (only the columns the content checks
    read); a table that cannot be read becomes a `bundle.csv` finding in `data.problems`. The names read."""
    read = []
    for name in names:
        path = data.root / data.latent_file(name)
        if name in data.latent_tried or not path.exists():
            continue  # a missing one: reported by the manifest check when listed; the content checks skip it
        data.latent_tried.add(name)
        label, columns = data.latent_file(name), LATENT_COLUMNS[name]
        try:
            if name in LATENT_LAST_ROWS:
                table = _last_rows(
                    CsvBlocks(path, label, root=data.root, columns=columns), *LATENT_LAST_ROWS[name]
                )
            else:
                table = read_csv_lines(path, label, root=data.root, columns=columns)
            data.latent[name] = table[[c for c in columns if c in table.columns]]
            del table
        except BundleError as exc:
            data.problems.append(
                finding(
                    "bundle.csv",
                    str(exc),
                    object=name,
                    file=data.latent_file(name),
                    line=getattr(exc, "line", None),
                )
            )
            continue
        data.latent_read.add(name)
        read.append(name)
    return read


def read_policies(data: BundleData) -> None:
    """Read latent/world/policies.json into `data.policies` (a finding in `data.problems` when it is
    unreadable; nothing when it is absent)."""
    root = data.root
    policies = root / POLICIES
    if policies.exists():
        try:
            loaded = load_json_bounded(read_text_regular(policies, str(policies), root=root), str(policies))
        except BundleError as exc:
            data.problems.append(
                finding("bundle.json", str(exc), file=POLICIES, line=getattr(exc, "line", None))
            )
        else:
            if isinstance(loaded, dict):
                data.policies = loaded
            else:
                data.problems.append(
                    finding(
                        "bundle.json",
                        f"{policies}: / must be an object; rebuild the bundle.",
                        file=POLICIES,
                        pointer="",
                    )
                )


def read_object(
    data: BundleData, bundle: Bundle, spec: ObjectSpec, columns: Collection[str] | None = None
) -> pd.DataFrame | None:
    """data/<Object>.csv (or its parts) as `BundleData.raw` holds it (only `columns`, and `_line`, if given);
    None, with a `bundle.csv` finding in `data.problems` naming the file and line, when it cannot be read."""
    try:
        return bundle.read_raw(spec.name, spec, columns)
    except BundleError as exc:
        unreadable(data, spec, exc)
        return None


def unreadable(data: BundleData, spec: ObjectSpec, exc: BundleError) -> None:
    """The `bundle.csv` finding in `data.problems` for `spec`'s data that `exc` says cannot be read."""
    data.problems.append(
        finding(
            "bundle.csv",
            str(exc),
            object=spec.name,
            file=_relative(data.root, getattr(exc, "file", None)) or data.data_file(spec.name),
            line=getattr(exc, "line", None),
        )
    )


def _last_rows(blocks: CsvBlocks, column: str, value: str) -> pd.DataFrame:
    """The rows of the table `blocks` reads whose id's last row has `value` in `column`: each such id's last row,
    in the order of those rows (as `drop_duplicates("Id", keep="last")` then a filter on `column` gives them).
    The whole table, read a block at a time, when it lacks the id or the column."""
    last: dict[str, list[Any]] = {}  # an id whose last row so far has the value → that row
    kept: list[str] = []
    frames = []
    for block in blocks.frames():
        if "Id" not in block.columns or column not in block.columns:
            frames.append(block)  # (then every block is kept)
            continue
        kept = list(block.columns)
        at_id, at_value = kept.index("Id"), kept.index(column)
        for row in zip(*(block[c].tolist() for c in kept), strict=True):
            last.pop(row[at_id], None)  # re-inserted below: the order is that of the ids' last rows
            if row[at_value] == value:
                last[row[at_id]] = list(row)
    if frames:
        return pd.concat(frames, ignore_index=True)
    if not kept:  # no row: the header's columns, as `read_csv_lines` gives them
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in blocks.kept}).assign(
            _line=pd.Series([], dtype="int64")
        )
    table = pd.DataFrame(list(last.values()), columns=kept, dtype=object)
    table["_line"] = table["_line"].astype("int64")
    return table


def _relative(root: Path, file: str | None) -> str | None:
    """`file` (as a BundleError names it) relative to the bundle root; None when it is elsewhere."""
    if not file:
        return None
    path = Path(file)
    try:
        return (path if not path.is_absolute() else path.relative_to(root)).as_posix()
    except ValueError:
        try:
            return path.relative_to(root.resolve()).as_posix()
        except ValueError:
            return None


def _check_files(root: Path, manifest: dict[str, Any]) -> list[Finding]:
    out = []
    files = manifest.get("files", {})
    if not isinstance(files, dict):
        return [
            finding(
                "bundle.manifest",
                f"{root / 'manifest.json'}: /files must be an object.",
                file="manifest.json",
                pointer="/files",
            )
        ]
    for rel, digest in sorted(files.items()):
        path = root / str(rel)
        if not path.exists() and not path.is_symlink():
            out.append(
                finding(
                    "bundle.file-missing",
                    f"{rel} is listed in manifest.json but missing; restore it or rebuild the bundle.",
                    file=rel,
                )
            )
            continue
        try:
            actual = sha256_file(path, root=root)
        except BundleError as exc:
            out.append(finding("bundle.unsafe-file", str(exc), file=str(rel)))
            continue
        if actual != digest:
            out.append(
                finding(
                    "bundle.hash-mismatch",
                    f"{rel} does not match its SHA-256 in manifest.json: the file changed after the build. "
                    "Rebuild the bundle or restore the file.",
                    file=rel,
                )
            )
    return out


def _resolve_profile(data: BundleData, given: str | Profile | None) -> Profile | None:
    """The build's profile: the one given, else the manifest's path, else the manifest's profile name."""
    if isinstance(given, Profile):
        return given
    manifest = data.manifest or {}
    entry = manifest.get("profile")
    recorded: dict[str, Any] = entry if isinstance(entry, dict) else {}
    candidates: list[str] = []
    if given is not None:
        candidates.append(given)
    else:
        if isinstance(recorded.get("path"), str):
            candidates.append(recorded["path"])
        if isinstance(recorded.get("name"), str):
            candidates.append(recorded["name"])
    errors = []
    for candidate in candidates:
        try:
            profile = load_profile(candidate, data.model)
        except OrgseedError as exc:
            errors.append(str(exc))
            continue
        if given is None and recorded.get("sha256") and profile.digest != recorded["sha256"]:
            data.problems.append(
                finding(
                    "bundle.profile-changed",
                    f"The profile {profile.path} differs from the one the bundle was built with "
                    "(manifest.json /profile/sha256); bounds and time span are checked against the current file. "
                    "Rebuild the bundle, or pass the original profile with --profile.",
                    file="manifest.json",
                    pointer="/profile/sha256",
                )
            )
        return profile
    detail = f" ({errors[-1]})" if errors else ""
    data.problems.append(
        finding(
            "bundle.profile",
            f"Cannot load the profile the bundle was built with{detail}. Pass it with --profile PATH.",
            file="manifest.json",
            pointer="/profile",
        )
    )
    return None
