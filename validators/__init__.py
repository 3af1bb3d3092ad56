"""Checks data: schema, integrity, rules and text. Each check returns findings; none stops at the first.

A plain library (no prefect, typer or rich): `validate_bundle(root)` returns a `Report` with every finding,
`write_report` stores it as `reports/validation.json`. The rule table is `validators.findings.RULES`.
"""

from validators.findings import RULES, Finding, Report, Rule, Severity, ValidationFailed
from validators.run import validate_bundle, write_report

__all__ = [
    "RULES",
    "Finding",
    "Report",
    "Rule",
    "Severity",
    "ValidationFailed",
    "validate_bundle",
    "write_report",
]
