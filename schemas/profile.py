"""Profiles: company, time span, record counts and the latent world's parameters.

A profile is a TOML file (`schemas/profiles/<name>.toml`). Its structure is checked against
`schemas/meta/profile.json`, then against the org model (objects, fields, picklist values). Every error
names the file and, where the key can be found, the line.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from schemas.errors import ProfileError, did_you_mean
from schemas.model import SCHEMA_DIR, OrgModel, load_model

PROFILE_DIR = SCHEMA_DIR / "profiles"
DERIVED_COUNTS = {"CaseHistory__c": "one row per creation, owner assignment and closing of each case"}


@dataclass(frozen=True)
class Company:
    name: str
    domain: str
    industry: str
    description: str


@dataclass(frozen=True)
class TimeSpan:
    start: date
    end: date  # inclusive

    @property
    def start_dt(self) -> datetime:
        return datetime.combine(self.start, time(0, 0))

    @property
    def end_dt(self) -> datetime:
        """The first instant after the span (exclusive upper bound)."""
        return datetime.combine(self.end, time(0, 0)) + _ONE_DAY

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1


_ONE_DAY = timedelta(days=1)


@dataclass(frozen=True)
class Profile:
    """A loaded, checked profile. `latent` keeps the validated latent tables as plain data."""

    name: str
    path: Path
    description: str
    company: Company
    span: TimeSpan
    counts: dict[str, int]
    scaling: dict[str, float]
    picklists: dict[str, dict[str, dict[str, float]]]
    latent: dict[str, Any]
    digest: str
    per_task: int = 130
    # [tasks] style: "crmarena" (queries and metadata.required in CRMArena's voice) or "explicit" (every
    # policy spelled out in metadata.required and "or None if ..." in the query, as orgseed wrote them first)
    task_style: str = "crmarena"
    # [bounds.<Child>] <Lookup> = [min, max]: children per parent through that lookup (checked by validators)
    bounds: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)

    def count(self, sobject: str, scale: float = 1.0) -> int:
        """Records of `sobject` at `scale` (round(count × scale^exponent)), at least 1 when count > 0."""
        base = self.counts[sobject]
        exponent = self.scaling.get(sobject, 1.0)
        if base == 0:
            return 0
        return max(1, math.floor(base * scale**exponent + 0.5))

    def counts_at(self, scale: float) -> dict[str, int]:
        return {name: self.count(name, scale) for name in self.counts}

    def picklist_weights(self, sobject: str, field: str) -> dict[str, float] | None:
        return self.picklists.get(sobject, {}).get(field)


class _Locator:
    """Finds the line of a key path in TOML text (tables, dotted and quoted keys, inline tables)."""

    _header = re.compile(r"^\s*\[\[?\s*(.+?)\s*\]\]?\s*(#.*)?$")
    _key = re.compile(
        r"^\s*((?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)(?:\s*\.\s*(?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+))*)\s*="
    )

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    @staticmethod
    def _split(dotted: str) -> list[str]:
        parts = re.findall(r"\"([^\"]*)\"|'([^']*)'|([A-Za-z0-9_-]+)", dotted)
        return [a or b or c for a, b, c in parts]

    def line_of(self, path: list[str]) -> int | None:
        table: list[str] = []
        best: tuple[int, int] | None = None  # (matched depth, line)
        for lineno, raw in enumerate(self.lines, start=1):
            m = self._header.match(raw)
            if m:
                table = self._split(m.group(1))
                depth = _common(table, path)
                if depth == len(table) and (best is None or depth > best[0]):
                    best = (depth, lineno)
                continue
            k = self._key.match(raw)
            if k:
                full = table + self._split(k.group(1))
                depth = _common(full, path)
                if depth == len(full) or depth == len(path):
                    if best is None or depth > best[0]:
                        best = (depth, lineno)
                elif depth > len(table) and (best is None or depth > best[0]):
                    best = (depth, lineno)
        return best[1] if best else None


def _common(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _plain(value: Any) -> Any:
    """TOML dates → ISO strings so the JSON Schema sees JSON-like data."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return value


@cache
def _profile_validator() -> jsonschema.Draft202012Validator:
    meta = json.loads((SCHEMA_DIR / "meta" / "profile.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(meta, format_checker=jsonschema.FormatChecker())


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def resolve_profile_path(name_or_path: str) -> Path:
    """A profile name (`crmarena`) or a path to a TOML file."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or "/" in name_or_path:
        if not candidate.exists():
            raise ProfileError(f"Profile file {candidate} does not exist.", file=str(candidate))
        return candidate
    path = PROFILE_DIR / f"{name_or_path}.toml"
    if not path.exists():
        known = available_profiles()
        raise ProfileError(
            f"Unknown profile `{name_or_path}`.{did_you_mean(name_or_path, known)} "
            f"Known profiles: {', '.join(known)}; or pass a path to a .toml file.",
            profile=name_or_path,
        )
    return path


def _read_toml(path: Path) -> tuple[dict[str, Any], str, bytes]:
    try:
        raw_bytes = path.read_bytes()
        text = raw_bytes.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"Cannot read profile {path}: {exc}.", file=str(path)) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        where = f"{path}:{m.group(1)}:{m.group(2)}" if m else str(path)
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise ProfileError(
            f"{where}: malformed TOML: {reason}. Fix the syntax at that position.",
            file=str(path),
            line=int(m.group(1)) if m else None,
        ) from exc
    return data, text, raw_bytes


def _merge(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """Child tables merge into base tables key by key; any other value replaces the base's."""
    out = dict(base)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _load_chain(
    path: Path, seen: tuple[Path, ...] = ()
) -> tuple[dict[str, Any], list[tuple[Path, str]], str]:
    """The profile at `path` merged over the profiles it extends; sources child-first; a digest of all."""
    resolved = path.resolve()
    if resolved in seen:
        chain = " → ".join(str(p) for p in (*seen, resolved))
        raise ProfileError(
            f"{path}: `profile.extends` forms a cycle ({chain}); remove one link.", file=str(path)
        )
    data, text, raw = _read_toml(path)
    sources = [(path, text)]
    digest = _sha256(raw)
    parent = data.get("profile", {}).get("extends") if isinstance(data.get("profile"), dict) else None
    if parent is None:
        return data, sources, digest
    if not isinstance(parent, str):
        line = _Locator(text).line_of(["profile", "extends"])
        raise ProfileError(
            f"{path}:{line}: `profile.extends` must be a profile name or a path.", file=str(path), line=line
        )
    candidate = Path(parent)
    if candidate.suffix == ".toml" and not candidate.is_absolute():
        candidate = path.parent / candidate
        if not candidate.exists():
            raise ProfileError(
                f"{path}: `profile.extends` names {candidate}, which does not exist.", file=str(path)
            )
        base_path = candidate
    else:
        base_path = resolve_profile_path(parent)
    base, base_sources, base_digest = _load_chain(base_path, (*seen, resolved))
    child_profile = dict(data.get("profile", {}))
    child_profile.pop("extends", None)
    merged = _merge(base, {**data, "profile": {**base.get("profile", {}), **child_profile}})
    return merged, sources + base_sources, _sha256(f"{digest}:{base_digest}".encode())


def load_profile(name_or_path: str, model: OrgModel | None = None) -> Profile:
    path = resolve_profile_path(name_or_path)
    model = model or load_model()
    data, sources, digest = _load_chain(path)
    locators = [(src, _Locator(text)) for src, text in sources]

    def fail(keypath: list[str], message: str) -> ProfileError:
        where, line = str(path), None
        for src, locator in locators:
            found = locator.line_of(keypath)
            if found:
                where, line = f"{src}:{found}", found
                break
        dotted = ".".join(keypath)
        return ProfileError(
            f"{where}: `{dotted}`: {message}" if dotted else f"{where}: {message}",
            file=where.rsplit(":", 1)[0] if line else str(path),
            line=line,
            key=dotted,
        )

    plain = _plain(data)
    errors = sorted(_profile_validator().iter_errors(plain), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        err = errors[0]
        keypath = [str(p) for p in err.absolute_path]
        message = err.message
        if err.validator == "additionalProperties":
            extra = re.findall(r"'([^']+)'", err.message)
            if extra:
                parent = err.schema.get("properties", {})
                hint = did_you_mean(extra[0], list(parent)) if parent else ""
                keypath = [*keypath, extra[0]]
                message = f"unknown key.{hint} Remove it or fix its name."
        elif err.validator == "required":
            message = f"{err.message}; add it."
        raise fail(keypath, message)

    counts: dict[str, int] = dict(plain["counts"])
    for name in counts:
        if name in DERIVED_COUNTS:
            raise fail(["counts", name], f"is derived ({DERIVED_COUNTS[name]}); remove it from [counts].")
        if not model.has(name):
            raise fail(["counts", name], f"unknown object.{did_you_mean(name, model.names)}")
        if model.get(name).name != name:
            raise fail(
                ["counts", name], f"object names are case-sensitive here; write `{model.get(name).name}`."
            )
    missing = [o.name for o in model if o.name not in counts and o.name not in DERIVED_COUNTS]
    if missing:
        raise fail(["counts"], f"no count for `{missing[0]}`; every generated object needs one.")
    for name in plain["scaling"]:
        if name not in counts:
            raise fail(["scaling", name], f"unknown object.{did_you_mean(name, list(counts))}")
    picklists: dict[str, dict[str, dict[str, float]]] = plain.get("picklists", {})
    for oname, fields in picklists.items():
        if not model.has(oname):
            raise fail(["picklists", oname], f"unknown object.{did_you_mean(oname, model.names)}")
        spec = model.get(oname)
        for fname, weights in fields.items():
            if not spec.has_field(fname):
                raise fail(
                    ["picklists", oname, fname],
                    f"`{oname}` has no field `{fname}`.{did_you_mean(fname, spec.field_names)}",
                )
            fspec = spec.field(fname)
            if fspec.type != "picklist":
                raise fail(["picklists", oname, fname], f"is a {fspec.type} field, not a picklist.")
            for value in weights:
                if value not in fspec.picklist:
                    raise fail(
                        ["picklists", oname, fname, value],
                        f"`{value}` is not a value of {oname}.{fname}.{did_you_mean(value, fspec.picklist)} "
                        f"Allowed: {', '.join(fspec.picklist)}.",
                    )
            if sum(weights.values()) <= 0:
                raise fail(["picklists", oname, fname], "weights must not all be zero.")

    bounds = _check_bounds(plain.get("bounds", {}), model, fail)

    start, end = date.fromisoformat(plain["time"]["start"]), date.fromisoformat(plain["time"]["end"])
    if end <= start:
        raise fail(["time", "end"], f"must be after time.start ({start}).")
    if (end - start).days < 120:
        raise fail(
            ["time", "end"], "the span must cover at least 120 days so every task has periods to ask about."
        )

    latent = plain["latent"]
    _check_latent(latent, counts, model, fail)
    return Profile(
        name=plain["profile"]["name"],
        path=path,
        description=plain["profile"].get("description", ""),
        company=Company(**plain["company"]),
        span=TimeSpan(start, end),
        counts=counts,
        scaling={k: float(v) for k, v in plain["scaling"].items()},
        picklists=picklists,
        latent=latent,
        digest=digest,
        per_task=int(plain.get("tasks", {}).get("per_task", 130)),
        task_style=str(plain.get("tasks", {}).get("style", "crmarena")),
        bounds=bounds,
    )


def _check_bounds(
    table: dict[str, dict[str, list[int]]], model: OrgModel, fail: Any
) -> dict[str, dict[str, tuple[int, int]]]:
    """`[bounds.<Child>] <Lookup> = [min, max]`: names a lookup of a generated object to another one."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for child, fields in table.items():
        if not model.has(child):
            raise fail(["bounds", child], f"unknown object.{did_you_mean(child, model.names)}")
        spec = model.get(child)
        if spec.name != child:
            raise fail(["bounds", child], f"object names are case-sensitive here; write `{spec.name}`.")
        for fname, (low, high) in fields.items():
            if not spec.has_field(fname) or spec.field(fname).name != fname:
                raise fail(
                    ["bounds", child, fname],
                    f"`{child}` has no field `{fname}`.{did_you_mean(fname, spec.field_names)}",
                )
            fspec = spec.field(fname)
            if not fspec.is_lookup:
                lookups = ", ".join(f.name for f in spec.lookups) or "none"
                raise fail(
                    ["bounds", child, fname],
                    f"is a {fspec.type} field; bounds count children through a lookup ({child} lookups: {lookups}).",
                )
            if fspec.org_provided:
                raise fail(
                    ["bounds", child, fname],
                    f"points at `{fspec.reference_to[0]}`, which lives in the org, not in the bundle; "
                    "bounds need a generated parent.",
                )
            if low > high:
                raise fail(
                    ["bounds", child, fname], f"min {low} is greater than max {high}; write [min, max]."
                )
            out.setdefault(child, {})[fname] = (int(low), int(high))
    return out


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _check_latent(latent: dict[str, Any], counts: dict[str, int], model: OrgModel, fail: Any) -> None:
    remedies = latent["remedies"]
    issues = latent["issues"]
    categories = latent["categories"]
    for key, issue in issues.items():
        for remedy in issue["remedies"]:
            if remedy not in remedies:
                raise fail(
                    ["latent", "issues", key, "remedies", remedy],
                    f"unknown remedy.{did_you_mean(remedy, list(remedies))} Define it under [latent.remedies].",
                )
        priority = model.get("Case").field("Priority")
        if issue["priority"] not in priority.picklist:
            raise fail(
                ["latent", "issues", key, "priority"],
                f"`{issue['priority']}` is not a Case.Priority value ({', '.join(priority.picklist)}).",
            )
    family = model.get("Product2").field("Family")
    for name, cat in categories.items():
        if name not in family.picklist:
            raise fail(
                ["latent", "categories", name],
                f"is not a value of Product2.Family.{did_you_mean(name, family.picklist)} Add it to "
                "schemas/objects/Product2.json or rename the category.",
            )
        for issue_key in cat["issues"]:
            if issue_key not in issues:
                raise fail(
                    ["latent", "categories", name, "issues", issue_key],
                    f"unknown issue.{did_you_mean(issue_key, list(issues))}",
                )
    if counts.get("ProductCategory", 0) > len(categories):
        raise fail(
            ["counts", "ProductCategory"],
            f"asks for {counts['ProductCategory']} categories but [latent.categories] defines {len(categories)}.",
        )
    if counts.get("Issue__c", 0) > len(issues):
        raise fail(
            ["counts", "Issue__c"],
            f"asks for {counts['Issue__c']} issues but [latent.issues] defines {len(issues)}.",
        )
    if counts.get("Issue__c", 0) < 2:
        raise fail(["counts", "Issue__c"], "needs at least 2 issues for the issue tasks to have answers.")
    if sum(h["share"] for h in latent["habits"].values()) <= 0:
        raise fail(["latent", "habits"], "habit shares must not all be zero.")
    n_products, n_books = counts.get("Product2", 0), counts.get("Pricebook2", 0)
    entries = counts.get("PricebookEntry", 0)
    if n_books < 1 and n_products > 0:
        raise fail(["counts", "Pricebook2"], "needs at least the standard price book.")
    if n_products and not (n_products <= entries <= n_products * n_books):
        raise fail(
            ["counts", "PricebookEntry"],
            f"must be between {n_products} (a standard price for every product) and "
            f"{n_products * n_books} (every book lists every product); got {entries}.",
        )
    if counts.get("ProductCategoryProduct", 0) < n_products and n_products:
        raise fail(
            ["counts", "ProductCategoryProduct"],
            f"must be at least Product2 ({n_products}): every product belongs to a category.",
        )
    for name, cat in categories.items():
        for noun, t in cat.get("types", {}).items():
            lo, hi = t["grams"]
            if lo > hi:
                raise fail(
                    ["latent", "categories", name, "types", noun, "grams"],
                    f"is [{lo}, {hi}]: the lightest weight must come first ([low, high] in grams).",
                )
    per_cat = max((len(c.get("types") or c["nouns"]) for c in categories.values()), default=0)
    if n_products > 60 * per_cat * len(categories):
        raise fail(["counts", "Product2"], "is more than the category vocabularies can name uniquely.")
    if counts.get("OrderItem", 0) < counts.get("Order", 0):
        raise fail(["counts", "OrderItem"], "must be at least Order: every order has an item.")
    if counts.get("Contact", 0) != counts.get("Account", 0):
        raise fail(["counts", "Contact"], "must equal Account: every person account has exactly one contact.")
