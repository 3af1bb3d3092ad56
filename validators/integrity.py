"""References, keys and cardinality.

- Ids are unique per object and carry their object's key prefix.
- Every lookup resolves to an existing record of the object it references. Lookups marked `orgProvided`
  point at records that live in the org (Profile, RecordType, ...): only their key prefix is checked.
- A required lookup is present (reported once, here, rather than also as `schema.required`).
- Unique and external-id fields (Username, UrlName, External_ID__c) repeat no value; Salesforce compares
  them case-insensitively. Combinations Salesforce keeps unique are declared in `UNIQUE_TOGETHER`.
- Each parent has as many children as the profile's `[bounds]` allow (`[bounds.OrderItem] OrderId = [1, 20]`:
  every Order has 1 to 20 OrderItems).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from schemas.model import ObjectSpec, OrgModel
from schemas.profile import Profile
from validators.findings import Finding, finding, show

UNIQUE_TOGETHER: dict[str, tuple[tuple[str, ...], str]] = {
    "PricebookEntry": (
        ("Pricebook2Id", "Product2Id"),
        "a price book lists a product once (a real org refuses the second entry with DUPLICATE_VALUE)",
    ),
    "ProductCategoryProduct": (
        ("ProductCategoryId", "ProductId"),
        "a product is assigned to a category once",
    ),
}


def _file(sobject: str) -> str:
    return f"data/{sobject}.csv"


def check_integrity(raw: dict[str, pd.DataFrame], model: OrgModel, profile: Profile | None) -> list[Finding]:
    out: list[Finding] = []
    ids = {name: set(frame["Id"].dropna().tolist()) for name, frame in raw.items()}
    for spec in model:
        frame = raw.get(spec.name)
        if frame is None:
            continue
        out.extend(_ids(spec, frame))
        out.extend(_lookups(spec, frame, model, ids))
        out.extend(_unique(spec, frame))
    if profile is not None:
        out.extend(_cardinality(raw, model, profile))
    return out


def _ids(spec: ObjectSpec, frame: pd.DataFrame) -> list[Finding]:
    return [*_duplicate_ids(spec, frame), *_key_prefixes(spec, frame)]


def _duplicate_ids(spec: ObjectSpec, frame: pd.DataFrame) -> list[Finding]:
    """Each record whose Id an earlier record has (naming that record's line)."""
    out = []
    col = frame["Id"]
    lines = frame["_line"].to_numpy()
    present = col.notna().to_numpy()
    dup = col.duplicated(keep="first").to_numpy() & present
    first_line = dict(zip(col[present][::-1], lines[present][::-1], strict=True)) if dup.any() else {}
    for pos in np.flatnonzero(dup):
        rid = col.iat[pos]
        out.append(
            finding(
                "integrity.duplicate-id",
                f"{spec.name} {rid} at line {lines[pos]} repeats the Id of the record at line {first_line[rid]}; "
                "every record needs its own Id.",
                object=spec.name,
                record=rid,
                field="Id",
                file=_file(spec.name),
                line=lines[pos],
            )
        )
    return out


def _key_prefixes(spec: ObjectSpec, frame: pd.DataFrame) -> list[Finding]:
    """Each record whose Id does not start with its object's key prefix: a record at a time."""
    out = []
    col = frame["Id"]
    lines = frame["_line"].to_numpy()
    present = col.notna().to_numpy()
    if _all_start_with(col.to_numpy()[present].tolist(), [spec.key_prefix]):
        wrong = np.zeros(len(col), dtype=bool)
    else:
        wrong = (present & ~col.fillna("").str.startswith(spec.key_prefix).to_numpy()).astype(bool)
    for pos in np.flatnonzero(wrong):
        rid = col.iat[pos]
        out.append(
            finding(
                "integrity.key-prefix",
                f"{spec.name} Id {show(rid)} starts with `{str(rid)[:3]}`; {spec.name} ids start with "
                f"`{spec.key_prefix}`.",
                object=spec.name,
                record=rid,
                field="Id",
                file=_file(spec.name),
                line=lines[pos],
            )
        )
    return out


def _all_start_with(values: list[str], prefixes: list[str]) -> bool:
    """Whether every value starts with one of `prefixes` (distinct, all of one length), decided in C: the
    values joined, each after a line break, and the prefixes' occurrences after a line break counted (each
    value's start counts for at most one prefix). False (undecided) when a value holds a line break."""
    joined = "\n" + "\n".join(values)
    return joined.count("\n") == len(values) and sum(joined.count("\n" + p) for p in prefixes) == len(values)


def _lookups(
    spec: ObjectSpec, frame: pd.DataFrame, model: OrgModel, ids: dict[str, set[str]]
) -> list[Finding]:
    out = []
    rec = frame["Id"].to_numpy()
    lines = frame["_line"].to_numpy()
    for f in spec.lookups:
        col = frame[f.name]
        values = col.to_numpy(dtype=object)
        targets = list(f.reference_to)
        prefixes = {model.key_prefix(t): t for t in targets}
        expected = " or ".join(f"a {t} id (prefix `{model.key_prefix(t)}`)" for t in targets)
        null = col.isna().to_numpy()
        if f.required:
            for pos in np.flatnonzero(null):
                out.append(
                    finding(
                        "integrity.required-lookup",
                        f"{spec.name} {rec[pos]} has no `{f.name}`; every {spec.name} must point at {expected}.",
                        object=spec.name,
                        record=rec[pos],
                        field=f.name,
                        file=_file(spec.name),
                        line=lines[pos],
                    )
                )
        prefix: np.ndarray | None = None  # the first 3 characters, when some value may start otherwise
        if all(len(p) == 3 for p in prefixes) and _all_start_with(values[~null].tolist(), list(prefixes)):
            right_prefix = ~null
        else:
            prefix = col.fillna("").to_numpy(dtype=object).astype("U3").astype(object)
            right_prefix = np.isin(prefix, list(prefixes))
            for pos in np.flatnonzero(~null & ~right_prefix):
                owner = model.object_for_prefix(str(prefix[pos]))
                what = f", the prefix of {owner}" if owner else ", which no object of the model uses"
                out.append(
                    finding(
                        "integrity.key-prefix",
                        f"{spec.name} {rec[pos]}: `{f.name}` is {show(values[pos])}, which starts with "
                        f"`{prefix[pos]}`{what}; expected {expected}.",
                        object=spec.name,
                        record=rec[pos],
                        field=f.name,
                        file=_file(spec.name),
                        line=lines[pos],
                    )
                )
        if f.org_provided:
            continue
        if not all(t in ids for t in targets):
            continue  # the target's CSV is unreadable: reported as bundle.csv
        known = ids[targets[0]] if len(targets) == 1 else set().union(*(ids[t] for t in targets))
        # a set lookup per cell: no hash table of all the targets' ids built per field, as `isin` does
        exists = np.fromiter(map(known.__contains__, values), dtype=bool, count=len(values))
        for pos in np.flatnonzero(~null & right_prefix & ~exists):
            target = prefixes[str(values[pos])[:3] if prefix is None else str(prefix[pos])]
            out.append(
                finding(
                    "integrity.dangling-lookup",
                    f"{spec.name} {rec[pos]}: `{f.name}` points at {target} {values[pos]}, which does not exist in "
                    f"data/{target}.csv; point it at an existing {target} or remove the {spec.name}.",
                    object=spec.name,
                    record=rec[pos],
                    field=f.name,
                    file=_file(spec.name),
                    line=lines[pos],
                )
            )
    return out


def _unique(spec: ObjectSpec, frame: pd.DataFrame) -> list[Finding]:
    out = []
    rec = frame["Id"].to_numpy()
    lines = frame["_line"].to_numpy()
    for f in spec.fields:
        if f.type == "id" or not (f.unique or f.external_id):
            continue
        key = frame[f.name].str.lower()
        out.extend(_repeats(spec, key, rec, lines, [f.name], f"`{f.name}` must be unique (case-insensitive)"))
    together = UNIQUE_TOGETHER.get(spec.name)
    if together:
        fields, why = together
        if all(c in frame.columns for c in fields):
            key = frame[fields[0]].str.cat([frame[f] for f in fields[1:]], sep="\x1f")
            out.extend(_repeats(spec, key, rec, lines, list(fields), why, rule="integrity.unique-together"))
    return out


def _repeats(
    spec: ObjectSpec,
    key: pd.Series,
    rec: np.ndarray,
    lines: np.ndarray,
    fields: list[str],
    why: str,
    rule: str = "integrity.unique",
) -> list[Finding]:
    present = key.notna().to_numpy()
    dup = (key.duplicated(keep="first").to_numpy() & present).astype(bool)
    if not dup.any():
        return []
    first: dict[Any, int] = {}
    for pos in np.flatnonzero(present):
        first.setdefault(key.iat[pos], int(pos))
    out = []
    shown = " + ".join(f"`{f}`" for f in fields)
    for pos in np.flatnonzero(dup):
        other = first[key.iat[pos]]
        out.append(
            finding(
                rule,
                f"{spec.name} {rec[pos]} repeats the {shown} of {spec.name} {rec[other]} (line {lines[other]}): "
                f"{why}. Change one of them.",
                object=spec.name,
                record=rec[pos],
                field=fields[0] if len(fields) == 1 else ",".join(fields),
                file=_file(spec.name),
                line=lines[pos],
                related=[str(rec[other])],
            )
        )
    return out


# parents counted at a time by `_cardinality`
PARENT_SLICE = 1 << 20


def _cardinality(raw: dict[str, pd.DataFrame], model: OrgModel, profile: Profile) -> list[Finding]:
    out = []
    for child, fields in profile.bounds.items():
        for fname, bound in fields.items():
            fspec = model.get(child).field(fname)
            parent = fspec.reference_to[0]
            if child not in raw or parent not in raw:
                continue
            counts = raw[child][fname].value_counts()
            out.extend(bound_findings(child, fname, bound, parent, raw[parent], counts))
    return out


def bound_findings(
    child: str, fname: str, bound: tuple[int, int], parent: str, parents: pd.DataFrame, counts: pd.Series
) -> list[Finding]:
    """The parents (`Id`, `_line`) whose number of children (`counts`, by parent id; an id it lacks has none)
    is outside `bound`: a parent at a time, so the parents may come a block at a time."""
    low, high = bound
    out = []
    lines = parents["_line"].to_numpy()
    pid = parents["Id"].to_numpy()
    # the parents' counts a slice at a time (Case's bound at scale 1,000 counts 7.1 M order items: a
    # looked-up column, its filled and converted copies, 57 MB each, for all of them at once)
    for lo in range(0, len(parents), PARENT_SLICE):
        n = parents["Id"].iloc[lo : lo + PARENT_SLICE].map(counts).fillna(0).astype(int).to_numpy()
        for at in np.flatnonzero((n < low) | (n > high)).tolist():
            children, pos = n[at], lo + at
            out.append(
                finding(
                    "integrity.cardinality",
                    f"{parent} {pid[pos]} has {children} {child} record(s) (via `{child}.{fname}`); the profile's "
                    f"[bounds.{child}] {fname} = [{low}, {high}] allows {low} to {high}. Fix the data or the "
                    "bound.",
                    object=parent,
                    record=pid[pos],
                    file=_file(parent),
                    line=lines[pos],
                )
            )
    return out
