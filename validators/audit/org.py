"""The live-org section of an audit: a bundle against the org it was loaded into (or is served as).

Per object, the bundle's record count against the org's (`SELECT COUNT() FROM <Object>`), and a sample of
records compared field by field: each sampled bundle record is looked up in the org by its org id (the upload's
id map `uploads/<org id>/id_map.csv`, columns `object,bundle_id,org_id`; without one, ids are the bundle's own,
as when the org serves the bundle), and every field both sides have is compared after normalising the wire forms
(dates and date-times, numbers, booleans, empty = null). Reference fields are compared through the id map too.
The client is passed in (a `simple_salesforce.Salesforce`), so this library never imports an org's code.
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orgs.bundle import Bundle
from schemas.model import FieldSpec, OrgModel, load_model

SAMPLE = 25  # records compared per object
ID_MAP = "id_map.csv"


def load_id_map(root: Path, path: Path | None = None) -> tuple[dict[str, str], Path | None]:
    """bundle id → org id from `path`, or from the bundle's only `uploads/*/id_map.csv`; identity (empty map)
    when there is none. Raises ValueError when several uploads exist and none was named."""
    if path is None:
        found = sorted((root / "uploads").glob(f"*/{ID_MAP}")) if (root / "uploads").is_dir() else []
        if len(found) > 1:
            raise ValueError(
                f"{root / 'uploads'} holds {len(found)} id maps ({', '.join(p.parent.name for p in found)}); "
                "name the one of this org with --id-map."
            )
        path = found[0] if found else None
    if path is None:
        return {}, None
    out: dict[str, str] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None or not {"bundle_id", "org_id"} <= set(reader.fieldnames):
            raise ValueError(f"{path}:1: an id map has the columns object,bundle_id,org_id.")
        for row in reader:
            out[row["bundle_id"]] = row["org_id"]
    return out, path


def _norm(f: FieldSpec, value: Any, ids: Mapping[str, str]) -> Any:
    if value is None or value == "":
        return None
    if f.type == "boolean":
        return value if isinstance(value, bool) else str(value).lower() == "true"
    if f.type in ("int", "double", "currency", "percent"):
        number = float(value)
        return round(number, 6) if math.isfinite(number) else None
    if f.type == "datetime":
        text = str(value).replace("Z", "+0000")
        return text[:19]  # to the second, in UTC: both sides write UTC
    if f.type == "date":
        return str(value)[:10]
    if f.type in ("reference", "id"):
        text = str(value)
        return ids.get(text, text)[:15]
    return str(value)


def live_org(
    root: Path, sf: Any, id_map: Path | None = None, model: OrgModel | None = None, seed: int = 0
) -> dict[str, Any]:
    """The live-org section (verdict, summary, figures, flags) of the org `sf` against the bundle at `root`."""
    model = model or load_model()
    bundle = Bundle(root)
    ids, map_path = load_id_map(root, id_map)
    objects = []
    flags: list[dict[str, Any]] = []
    rng = random.Random(seed)
    for spec in model:
        raw = bundle.read_raw(spec.name, spec)
        org_count = int(sf.query(f"SELECT COUNT() FROM {spec.name}")["totalSize"])
        rows = raw.to_dict("records")
        sample = rng.sample(rows, min(SAMPLE, len(rows)))
        missing = 0
        mismatched: dict[str, int] = {}
        examples: list[dict[str, Any]] = []
        fields = [f for f in spec.fields if f.name != "Id"]
        if sample:
            org_ids = [ids.get(str(r["Id"]), str(r["Id"])) for r in sample]
            quoted = ", ".join("'" + i.replace("'", "\\'") + "'" for i in org_ids)
            got = sf.query_all(
                f"SELECT Id, {', '.join(f.name for f in fields)} FROM {spec.name} WHERE Id IN ({quoted})"
            )
            by_id = {str(r["Id"])[:15]: r for r in got["records"]}
            for rec, oid in zip(sample, org_ids, strict=True):
                theirs = by_id.get(oid[:15])
                if theirs is None:
                    missing += 1
                    continue
                for f in fields:
                    mine, other = _norm(f, rec.get(f.name), ids), _norm(f, theirs.get(f.name), {})
                    if mine != other:
                        mismatched[f.name] = mismatched.get(f.name, 0) + 1
                        if len(examples) < 3:
                            examples.append(
                                {"id": str(rec["Id"]), "field": f.name, "bundle": mine, "org": other}
                            )
        entry = {
            "object": spec.name,
            "bundle": len(rows),
            "org": org_count,
            "sampled": len(sample),
            "missing_in_org": missing,
            "fields_differing": dict(sorted(mismatched.items())),
            "examples": examples,
        }
        objects.append(entry)
        if org_count != len(rows):
            flags.append(
                {
                    "what": f"{spec.name}: {len(rows):,} in the bundle, {org_count:,} in the org",
                    "object": spec.name,
                    "value": org_count - len(rows),
                }
            )
        if missing:
            flags.append(
                {
                    "what": f"{spec.name}: {missing} of {len(sample)} sampled records are not in the org",
                    "object": spec.name,
                    "value": missing,
                }
            )
        for name, n in sorted(mismatched.items()):
            flags.append(
                {
                    "what": f"{spec.name}.{name}: {n} of {len(sample)} sampled records differ in the org",
                    "object": spec.name,
                    "value": n,
                }
            )
    same = sum(
        1
        for o in objects
        if o["bundle"] == o["org"] and not o["missing_in_org"] and not o["fields_differing"]
    )
    summary = f"{same} of {len(objects)} objects match the org in count and in every sampled field" + (
        f" (ids mapped by {map_path})" if map_path else " (ids as in the bundle)"
    )
    return {
        "title": "Live org",
        "verdict": "fail" if flags else "ok",
        "summary": summary,
        "figures": {
            "instance_url": str(getattr(sf, "base_url", "")),
            "id_map": str(map_path) if map_path else None,
            "objects": objects,
        },
        "flags": flags,
    }
