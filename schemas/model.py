"""The org model, loaded from `schemas/objects/*.json`.

Each object schema is a JSON Schema (2020-12) for one record, with Salesforce metadata under `x-sf`.
Generation order, validation, the local org's tables and describe, deployed metadata and the CSV columns
are all derived from this model, so adding a field is one JSON edit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from schemas.errors import ModelError, did_you_mean
from schemas.rules import KINDS, FieldRule, check_rules, parse_rule

SCHEMA_DIR = Path(__file__).resolve().parent
NUMBER_TYPES = frozenset({"currency", "double", "int"})


@dataclass(frozen=True)
class FieldSpec:
    """One field of an sObject, as the model declares it."""

    name: str
    type: str
    label: str
    description: str
    nillable: bool
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    picklist: tuple[str, ...] = ()
    reference_to: tuple[str, ...] = ()
    relationship_name: str | None = None
    child_relationship_name: str | None = None
    unique: bool = False
    external_id: bool = False
    custom: bool = False
    org_provided: bool = False
    audit: bool = False
    createable: bool = True
    # computed by the org from stored fields (e.g. a person's Name); never a column of the bundle's CSVs
    computed: bool = False
    auto_number: bool = False  # an org auto-number (CaseNumber, OrderNumber): describe says autoNumber
    # how the generator fills the field when no generator code does (`x-sf.generate`, schemas/rules.py)
    rule: FieldRule | None = None
    json_schema: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_lookup(self) -> bool:
        return self.type == "reference"

    @property
    def required(self) -> bool:
        return not self.nillable


@dataclass(frozen=True)
class ObjectSpec:
    """One sObject: its metadata, fields (in column order) and JSON Schema."""

    name: str
    label: str
    label_plural: str
    key_prefix: str
    custom: bool
    description: str
    external_id_field: str
    name_field: str | None
    fields: tuple[FieldSpec, ...]
    path: Path
    json_schema: dict[str, Any] = field(compare=False, repr=False)

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    @property
    def lookups(self) -> list[FieldSpec]:
        return [f for f in self.fields if f.is_lookup]

    @property
    def rule_fields(self) -> list[FieldSpec]:
        """The fields filled by a rule of the model (`x-sf.generate`) rather than by generator code."""
        return [f for f in self.fields if f.rule is not None]

    def has_field(self, name: str) -> bool:
        return self._index().get(name.lower()) is not None

    def field(self, name: str) -> FieldSpec:
        """The field called `name` (case-insensitive, as Salesforce resolves names)."""
        found = self._index().get(name.lower())
        if found is None:
            raise ModelError(
                f"`{self.name}` has no field `{name}`.{did_you_mean(name, self.field_names)}",
                sobject=self.name,
                field=name,
            )
        return found

    def _index(self) -> dict[str, FieldSpec]:
        return _field_index(self)


_FIELD_INDEX: dict[int, tuple[ObjectSpec, dict[str, FieldSpec]]] = {}


def _field_index(obj: ObjectSpec) -> dict[str, FieldSpec]:
    """By identity, not by the dataclass hash: hashing a spec hashes all its fields (~50 µs; the query
    compiler looks fields up thousands of times a second). The entry keeps `obj` alive, so its id is not
    reused."""
    hit = _FIELD_INDEX.get(id(obj))
    if hit is None or hit[0] is not obj:
        hit = (obj, {f.name.lower(): f for f in obj.fields})
        _FIELD_INDEX[id(obj)] = hit
    return hit[1]


@dataclass(frozen=True)
class ExternalObject:
    """An object that lookups point at but that lives in the org (Profile, RecordType, ...)."""

    name: str
    key_prefix: str
    resolve_by: dict[str, Any]


@dataclass(frozen=True)
class ChildRelationship:
    parent: str
    child: str
    field: str
    name: str


class OrgModel:
    """All objects of the org, in schema-config order, with case-insensitive lookup."""

    def __init__(self, objects: list[ObjectSpec], external: list[ExternalObject], root: Path) -> None:
        self.objects: dict[str, ObjectSpec] = {o.name: o for o in objects}
        self.external: dict[str, ExternalObject] = {e.name: e for e in external}
        self.root = root
        self._lower = {name.lower(): name for name in self.objects}
        self._check_references()
        check_rules(self)

    def __iter__(self) -> Iterator[ObjectSpec]:
        return iter(self.objects.values())

    def __len__(self) -> int:
        return len(self.objects)

    @property
    def names(self) -> list[str]:
        return list(self.objects)

    def has(self, name: str) -> bool:
        return name.lower() in self._lower

    def get(self, name: str) -> ObjectSpec:
        """The object called `name` (case-insensitive)."""
        canonical = self._lower.get(name.lower())
        if canonical is None:
            raise ModelError(
                f"The org model has no object `{name}`.{did_you_mean(name, self.names)}",
                sobject=name,
            )
        return self.objects[canonical]

    def key_prefix(self, name: str) -> str:
        if name in self.objects:
            return self.objects[name].key_prefix
        return self.external[name].key_prefix

    def object_for_prefix(self, prefix: str) -> str | None:
        for o in self.objects.values():
            if o.key_prefix == prefix:
                return o.name
        for e in self.external.values():
            if e.key_prefix == prefix:
                return e.name
        return None

    def child_relationships(self, parent: str) -> list[ChildRelationship]:
        """Lookups pointing at `parent` that declare a child relationship name (for subqueries)."""
        out = []
        for o in self.objects.values():
            for f in o.lookups:
                if parent in f.reference_to and f.child_relationship_name:
                    out.append(ChildRelationship(parent, o.name, f.name, f.child_relationship_name))
        return out

    def _check_references(self) -> None:
        for o in self.objects.values():
            for f in o.lookups:
                for target in f.reference_to:
                    if target in self.objects:
                        if f.org_provided:
                            raise ModelError(
                                f"{o.path.name}: /properties/{f.name}/x-sf/orgProvided is true but "
                                f"`{target}` is generated in the bundle; remove orgProvided.",
                                file=str(o.path),
                                pointer=f"/properties/{f.name}/x-sf/orgProvided",
                            )
                    elif target in self.external:
                        if not f.org_provided:
                            raise ModelError(
                                f"{o.path.name}: /properties/{f.name}/x-sf/referenceTo names `{target}`, "
                                "an org-provided object; set orgProvided: true.",
                                file=str(o.path),
                                pointer=f"/properties/{f.name}/x-sf/referenceTo",
                            )
                    else:
                        known = [*self.objects, *self.external]
                        raise ModelError(
                            f"{o.path.name}: /properties/{f.name}/x-sf/referenceTo names unknown object "
                            f"`{target}`.{did_you_mean(target, known)} Add it to schemas/objects/ or to "
                            "`external` in schemas/org.json.",
                            file=str(o.path),
                            pointer=f"/properties/{f.name}/x-sf/referenceTo",
                        )


def _pointer(path: Any) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else ""


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"Cannot read {path}: {exc.strerror}.", file=str(path)) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelError(
            f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}. Fix the JSON syntax.",
            file=str(path),
            line=exc.lineno,
        ) from exc


@cache
def _meta_validator() -> jsonschema.Draft202012Validator:
    meta = json.loads((SCHEMA_DIR / "meta" / "xsf.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(meta)


# What the meta-schema's `oneOf`s under x-sf.generate mean, in words (jsonschema only says "not valid under any").
RULE_SHAPES = {
    ("generate", "oneOf"): f"give exactly one rule: {', '.join(KINDS.values())} (schemas/rules.py)",
    ("choice", "oneOf"): 'give {"value": weight, ...} with weights of 0 or more, or "uniform" for a picklist',
    ("faker", "oneOf"): 'give a provider name, or {"provider": name, "args": {keyword arguments}}',
}


def parse_object(path: Path, doc: Any) -> ObjectSpec:
    """Check one object schema (JSON Schema + x-sf metadata) and turn it into an ObjectSpec."""
    try:
        jsonschema.Draft202012Validator.check_schema(doc)
    except jsonschema.SchemaError as exc:
        raise ModelError(
            f"{path.name}: {_pointer(exc.absolute_path) or '/'}: not a valid JSON Schema: {exc.message}.",
            file=str(path),
            pointer=_pointer(exc.absolute_path),
        ) from exc
    errors = sorted(_meta_validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        first = errors[0]
        where = (str(first.absolute_path[-1]) if first.absolute_path else "", str(first.validator))
        message = RULE_SHAPES.get(where, first.message)
        raise ModelError(
            f"{path.name}: {_pointer(first.absolute_path) or '/'}: {message}. "
            "Object schemas need Salesforce metadata under `x-sf` (see schemas/meta/xsf.json).",
            file=str(path),
            pointer=_pointer(first.absolute_path),
        )
    xsf = doc["x-sf"]
    if xsf["name"] != path.stem:
        raise ModelError(
            f"{path.name}: /x-sf/name is `{xsf['name']}` but the file is named `{path.stem}`; they must match.",
            file=str(path),
            pointer="/x-sf/name",
        )
    required = set(doc["required"])
    fields: list[FieldSpec] = []
    for name, prop in doc["properties"].items():
        fx = prop["x-sf"]
        unknown_required = [r for r in doc["required"] if r not in doc["properties"]]
        if unknown_required:
            raise ModelError(
                f"{path.name}: /required lists `{unknown_required[0]}`, which is not a property.",
                file=str(path),
                pointer="/required",
            )
        spec = FieldSpec(
            name=name,
            type=fx["type"],
            label=fx["label"],
            description=fx["description"],
            nillable=name not in required,
            length=fx.get("length"),
            precision=fx.get("precision"),
            scale=fx.get("scale"),
            picklist=tuple(fx.get("picklistValues", ())),
            reference_to=tuple(fx.get("referenceTo", ())),
            relationship_name=fx.get("relationshipName"),
            child_relationship_name=fx.get("childRelationshipName"),
            unique=bool(fx.get("unique", False)),
            external_id=bool(fx.get("externalId", False)),
            custom=bool(fx.get("custom", False)),
            org_provided=bool(fx.get("orgProvided", False)),
            audit=bool(fx.get("auditField", False)),
            createable=bool(fx.get("createable", True)),
            json_schema=prop,
        )
        if "generate" in fx:
            spec = replace(spec, rule=parse_rule(spec, fx["generate"], path))
        fields.append(spec)
    if fields[0].name != "Id" or fields[0].type != "id":
        raise ModelError(
            f"{path.name}: /properties: the first property must be `Id` of x-sf type `id`.",
            file=str(path),
            pointer="/properties/Id",
        )
    name_field = xsf.get("nameField")
    if name_field and name_field not in doc["properties"]:
        raise ModelError(
            f"{path.name}: /x-sf/nameField names `{name_field}`, which is not a property.",
            file=str(path),
            pointer="/x-sf/nameField",
        )
    return ObjectSpec(
        name=xsf["name"],
        label=xsf["label"],
        label_plural=xsf["labelPlural"],
        key_prefix=xsf["keyPrefix"],
        custom=xsf["custom"],
        description=xsf["description"],
        external_id_field=xsf["externalIdField"],
        name_field=name_field,
        fields=tuple(fields),
        path=path,
        json_schema=doc,
    )


MODEL_ENV = "ORGSEED_MODEL"


def load_model(root: Path | str | None = None) -> OrgModel:
    """Load the org model from `root`.

    Without `root`: the folder named by `$ORGSEED_MODEL` (a copy of `schemas/` holding `org.json` and
    `objects/`, e.g. with fields of your own), else the schemas shipped with orgseed; loaded once per process.
    """
    if root is not None:
        return _load(Path(root))
    override = os.environ.get(MODEL_ENV)
    if not override:
        return _cached_model(SCHEMA_DIR)
    base = Path(override).expanduser().resolve()
    if not (base / "org.json").is_file():
        raise ModelError(
            f"${MODEL_ENV} names {base}, which holds no org.json. Point it at a folder holding org.json and "
            "objects/ (a copy of orgseed's schemas/ folder), or unset it to use the shipped model.",
            file=str(base),
        )
    return _cached_model(base)


@cache
def _cached_model(base: Path) -> OrgModel:
    return _load(base)


def _load(base: Path) -> OrgModel:
    index_path = base / "org.json"
    index = _read_json(index_path)
    if not isinstance(index, dict) or not isinstance(index.get("objects"), list):
        raise ModelError(f"{index_path}: /objects must be a list of object names.", file=str(index_path))
    objects: list[ObjectSpec] = []
    seen_prefix: dict[str, str] = {}
    on_disk = sorted(p.stem for p in (base / "objects").glob("*.json"))
    for name in index["objects"]:
        path = base / "objects" / f"{name}.json"
        if not path.exists():
            raise ModelError(
                f"{index_path}: /objects lists `{name}` but {path} does not exist.{did_you_mean(name, on_disk)}",
                file=str(index_path),
                pointer="/objects",
            )
        spec = parse_object(path, _read_json(path))
        if spec.key_prefix in seen_prefix:
            raise ModelError(
                f"{path.name}: /x-sf/keyPrefix `{spec.key_prefix}` is already used by "
                f"`{seen_prefix[spec.key_prefix]}`; key prefixes must be unique.",
                file=str(path),
                pointer="/x-sf/keyPrefix",
            )
        seen_prefix[spec.key_prefix] = spec.name
        objects.append(spec)
    unlisted = [n for n in on_disk if n not in index["objects"]]
    if unlisted:
        raise ModelError(
            f"{base / 'objects' / (unlisted[0] + '.json')} is not listed in {index_path} /objects; "
            "list it or remove the file.",
            file=str(index_path),
            pointer="/objects",
        )
    external = [
        ExternalObject(name, spec["keyPrefix"], dict(spec.get("resolveBy", {})))
        for name, spec in sorted(index.get("external", {}).items())
    ]
    return OrgModel(objects, external, base)
