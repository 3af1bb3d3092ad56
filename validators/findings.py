"""Findings, the rule table and the validation report.

A *finding* is one problem at one place: the rule that found it, how bad it is, the object, record id and
field, the file and line (or JSON pointer) it came from, and a message that says what was found and what
was expected. Every rule any check can report is declared in `RULES`, with its severity: the table is the
one place to read (or change) what orgseed checks and how strictly.

Severities: `fatal` — the bundle itself cannot be trusted or read (exit 2); `error` — the data is wrong
(exit 1, and `orgseed build` fails); `warning` — worth a look, does not fail a build.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from schemas.errors import DataFindings


class Severity(StrEnum):
    FATAL = "fatal"
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    summary: str
    covers: tuple[str, ...] = ()  # rules it makes redundant on the same cell (reported once, by this rule)


_F, _E, _W = Severity.FATAL, Severity.ERROR, Severity.WARNING

RULES: dict[str, Rule] = {
    r.id: r
    for r in [
        # -- the bundle itself --------------------------------------------------------------------------
        Rule("bundle.manifest", _F, "manifest.json is missing, malformed or not an orgseed manifest"),
        Rule("bundle.file-missing", _F, "a file the manifest lists is missing"),
        Rule(
            "bundle.hash-mismatch", _F, "a file's SHA-256 differs from the manifest (changed after the build)"
        ),
        Rule(
            "bundle.unsafe-file",
            _F,
            "a listed file is not a regular file in the bundle (a FIFO, device, folder, or a link leaving it)",
        ),
        Rule("bundle.csv", _F, "a CSV cannot be read (bad encoding, header, quoting or cell count)"),
        Rule("bundle.json", _F, "a JSON file of the bundle cannot be read"),
        Rule("bundle.profile", _F, "the profile the bundle was built with cannot be found or loaded"),
        Rule(
            "bundle.profile-changed",
            _W,
            "the profile file changed since the build; checked against the current one",
        ),
        # -- schema.py: each record against its object's JSON Schema ----------------------------------
        Rule("schema.required", _E, "a required field is empty"),
        Rule("schema.type", _E, "a value has the wrong type (number, integer, boolean)"),
        Rule("schema.picklist", _E, "a value is not one of the field's picklist values"),
        Rule("schema.pattern", _E, "a value does not match the field's pattern (ids: key prefix and length)"),
        Rule("schema.format", _E, "a value is not a valid sf-id, sf-datetime, date or email"),
        Rule("schema.min-length", _E, "a text is shorter than the field allows"),
        Rule("schema.max-length", _E, "a text is longer than the field allows"),
        Rule("schema.minimum", _E, "a number is below the field's minimum"),
        Rule("schema.maximum", _E, "a number is above the field's maximum"),
        Rule("schema.constraint", _E, "a value breaks another JSON Schema keyword of the field"),
        # -- integrity.py: references, keys and cardinality ---------------------------------------------
        Rule("integrity.duplicate-id", _E, "two records of an object share an Id"),
        Rule("integrity.key-prefix", _E, "an Id or lookup has the key prefix of the wrong object"),
        Rule("integrity.dangling-lookup", _E, "a lookup points at a record that does not exist"),
        Rule(
            "integrity.required-lookup",
            _E,
            "a required lookup is empty",
            covers=("schema.required",),
        ),
        Rule("integrity.unique", _E, "a unique or external-id field repeats a value (case-insensitive)"),
        Rule("integrity.unique-together", _E, "two records repeat a combination Salesforce keeps unique"),
        Rule("integrity.cardinality", _E, "a parent has fewer or more children than the profile's [bounds]"),
        # -- rules.py: time and business rules ------------------------------------------------------------
        Rule("rules.time-span", _E, "a date or datetime falls outside the profile's time span"),
        Rule(
            "rules.case-closed-date",
            _E,
            "ClosedDate set on a case that is not Closed, or missing on one that is",
        ),
        Rule("rules.case-closed-before-created", _E, "a case closes before it was created"),
        Rule("rules.email-outside-case", _E, "an email is dated outside its case's lifetime"),
        Rule("rules.chat-outside-case", _E, "a chat falls outside its case's lifetime"),
        Rule(
            "rules.chat-times", _E, "a chat ends before it starts, or ChatDuration disagrees with its times"
        ),
        Rule("rules.history-outside-case", _E, "a CaseHistory__c row is dated outside its case's lifetime"),
        Rule("rules.history-creation", _E, "a case lacks exactly one `Case Creation` row at its CreatedDate"),
        Rule(
            "rules.history-first-assignment",
            _E,
            "a case's first `Owner Assignment` is missing or has an old value",
        ),
        Rule("rules.history-transfer-chain", _E, "a transfer's OldValue__c is not the previous NewValue__c"),
        Rule("rules.history-owner", _E, "Case.OwnerId differs from the last assignee in CaseHistory__c"),
        Rule("rules.history-closed", _E, "a `Case Closed` row is missing, extra, or not at ClosedDate"),
        Rule(
            "rules.history-values",
            _E,
            "a creation or closing row carries Old/NewValue__c, or an assignment lacks NewValue__c",
        ),
        Rule("rules.order-after-case", _E, "a case is dated before the order of the item it is about"),
        Rule("rules.case-customer", _E, "a case's account differs from its contact's or its order's account"),
        Rule("rules.chat-customer", _E, "a chat's account or contact differs from its case's"),
        Rule(
            "rules.order-item-pricebook",
            _E,
            "an order item's price book entry is not in its order's price book",
        ),
        Rule("rules.order-item-product", _E, "an order item's price book entry is for another product"),
        Rule("rules.order-item-price", _E, "an order item's UnitPrice differs from its price book entry's"),
        Rule("rules.order-pricebook-dates", _E, "an order is dated outside its price book's validity"),
        Rule("rules.standard-pricebook", _E, "there is not exactly one standard price book"),
        Rule("rules.standard-price", _E, "a product has no entry in the standard price book"),
        Rule("rules.activated-order-items", _E, "an activated order has no items"),
        # -- text.py: free text and the latent world ----------------------------------------------------
        Rule("text.empty", _E, "a free-text field is empty or blank"),
        Rule("text.control-character", _E, "a cell holds a NUL or another control character"),
        Rule(
            "text.doubled-determiner",
            _E,
            'a free text doubles an article or determiner ("My the", "The the", "a the"): a template bug',
        ),
        Rule(
            "text.article-before-plural",
            _E,
            'a free text puts "a"/"an" before a plural or mass remedy phrase ("a loyalty points")',
        ),
        Rule(
            "text.truncated",
            _E,
            "a text looks cut off (ends mid-sentence, with an ellipsis, or at the length limit)",
        ),
        Rule(
            "text.near-duplicate",
            _E,
            "two texts of the same field are near-duplicates (Jaccard >= 0.5 on word 3-shingles)",
        ),
        Rule("text.zero-price", _E, "a text states a purchase at no cost ($0.00)"),
        Rule("text.product-missing", _E, "a case's subject and description do not name its product"),
        Rule("text.policy-window", _E, "a policy article does not state an allowed remedy with its window"),
        Rule("text.policy-unknown-remedy", _E, "a policy names a remedy that has no canonical phrase"),
        Rule("text.violation-label", _E, "a case's latent violation label disagrees with its issue's policy"),
        Rule("text.offer-missing", _E, "the offer a case is labelled with is not in its chat or emails"),
        Rule(
            "text.unlabelled-violation",
            _E,
            "a case labelled clean offers a remedy its policy does not allow now",
        ),
    ]
}


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    message: str
    object: str | None = None
    record: str | None = None
    field: str | None = None
    file: str | None = None  # relative to the bundle root
    line: int | None = None
    pointer: str | None = None  # JSON pointer, for JSON inputs
    related: tuple[str, ...] = ()  # other record ids involved (e.g. the near-duplicate's partner)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"severity": self.severity.value, "rule": self.rule}
        for key in ("object", "record", "field", "file", "line", "pointer"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.related:
            out["related"] = list(self.related)
        out["message"] = self.message
        return out

    def where(self) -> str:
        """`file:line` or `file#pointer`, for messages."""
        if self.file and self.line is not None:
            return f"{self.file}:{self.line}"
        if self.file and self.pointer:
            return f"{self.file}#{self.pointer}"
        return self.file or ""


def finding(
    rule: str,
    message: str,
    *,
    object: str | None = None,
    record: Any = None,
    field: str | None = None,
    file: str | None = None,
    line: Any = None,
    pointer: str | None = None,
    related: tuple[str, ...] | list[str] = (),
) -> Finding:
    """A finding of a declared rule (its severity comes from `RULES`)."""
    spec = RULES[rule]
    return Finding(
        rule=rule,
        severity=spec.severity,
        message=message,
        object=object,
        record=None if record is None else str(record),
        field=field,
        file=file,
        line=None if line is None else int(line),
        pointer=pointer,
        related=tuple(str(r) for r in related),
    )


def show(value: Any, limit: int = 80) -> str:
    """A value as it appears in a message: backticked, shortened, `(empty)` for null."""
    if value is None:
        return "(empty)"
    text = str(value).replace("\n", "\\n")
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"`{text}`"


def drop_covered(findings: list[Finding]) -> list[Finding]:
    """Drop findings another rule already reports on the same cell (see `Rule.covers`)."""
    by_cell: dict[tuple[Any, ...], set[str]] = {}
    for f in findings:
        by_cell.setdefault((f.object, f.record, f.line, f.field), set()).add(f.rule)
    covered: set[tuple[Any, ...]] = set()
    for cell, rules in by_cell.items():
        for rule in rules:
            for other in RULES[rule].covers:
                if other in rules:
                    covered.add((*cell, other))
    return [f for f in findings if (f.object, f.record, f.line, f.field, f.rule) not in covered]


@dataclass
class Report:
    """Every finding of one validation run, with what was checked and how long it took."""

    bundle: str
    findings: list[Finding] = field(default_factory=list)
    records: int = 0
    objects: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def fatal(self) -> int:
        return self.count(Severity.FATAL)

    @property
    def errors(self) -> int:
        return self.count(Severity.ERROR)

    @property
    def warnings(self) -> int:
        return self.count(Severity.WARNING)

    @property
    def ok(self) -> bool:
        """No fatal findings and no errors (warnings allowed)."""
        return self.fatal == 0 and self.errors == 0

    @property
    def exit_code(self) -> int:
        if self.fatal:
            return 2
        return 1 if self.errors else 0

    def summary(self) -> list[tuple[str, str, str, int]]:
        """(object, rule, severity, count) rows, most severe first, then by object and rule."""
        counts = Counter((f.object or "(bundle)", f.rule, f.severity.value) for f in self.findings)
        order = {s.value: i for i, s in enumerate(Severity)}
        rows = [(o, r, s, n) for (o, r, s), n in counts.items()]
        return sorted(rows, key=lambda x: (order[x[2]], x[0], x[1]))

    def to_json(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle,
            "ok": self.ok,
            "counts": {"fatal": self.fatal, "error": self.errors, "warning": self.warnings},
            "records": self.records,
            "objects": self.objects,
            "timings": self.timings,
            "skipped": self.skipped,
            "summary": [{"object": o, "rule": r, "severity": s, "count": n} for o, r, s, n in self.summary()],
            "findings": [f.to_json() for f in self.findings],
        }


class ValidationFailed(DataFindings):
    """A bundle has validation errors (the report names each one): exit 1."""

    def __init__(self, report: Report, report_path: str | None = None) -> None:
        where = f"; see {report_path}" if report_path else ""
        super().__init__(
            f"The bundle {report.bundle} failed validation: {report.fatal} fatal, {report.errors} error(s), "
            f"{report.warnings} warning(s){where}. Fix the generator or profile and rebuild.",
        )
        self.bundle = report.bundle
        self.errors = report.errors
        self.fatal = report.fatal
        self.report = report
        self.report_path = report_path

    def __reduce__(self) -> tuple[type[ValidationFailed], tuple[Report, str | None]]:
        return (ValidationFailed, (self.report, self.report_path))
