"""Validate a whole bundle: read it, run every check, collect every finding, write the report.

No check stops at the first problem, and a broken input only skips the checks that need it (the report's
`skipped` says which). `reports/validation.json` holds every finding; `Report.exit_code` is 0 when there are
no errors, 1 when there are, 2 when the bundle itself cannot be read or trusted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from orgs.bundle import Bundle
from schemas.gcpause import gc_paused, heap_frozen
from schemas.model import OrgModel, load_model
from schemas.profile import Profile
from validators.findings import Finding, Report, Severity, drop_covered
from validators.integrity import check_integrity
from validators.load import (
    LATENT_OBJECTS,
    POLICIES,
    BundleData,
    load_bundle,
    read_bundle_files,
    read_policies,
)
from validators.rules import check_rules
from validators.schema import check_schema
from validators.staged import StagedRun, run_checks
from validators.text import check_text

REPORT_PATH = "reports/validation.json"

CHECKS: tuple[tuple[str, Callable[[BundleData], list[Finding]]], ...] = (
    ("schema", lambda d: check_schema(d.raw, d.model)),
    ("integrity", lambda d: check_integrity(d.raw, d.model, d.profile)),
    ("rules", lambda d: check_rules(d.raw, d.model, d.profile)),
    ("text", check_text),
)

_RANK = {s: i for i, s in enumerate(Severity)}


def _order(f: Finding) -> tuple[object, ...]:
    return (
        _RANK[f.severity],
        f.file or "",
        f.line or 0,
        f.pointer or "",
        f.field or "",
        f.rule,
        f.record or "",
    )


def start_validation(root: Path | str, profile: Profile, model: OrgModel | None = None) -> StagedRun:
    """The staged validation of the bundle at `root`, to be begun while its objects are still being written
    (its latent world already is: the text checks read the remedies' phrases from its policies): run its
    first steps as they become runnable (`StagedRun.advance`, with the objects whose files are complete),
    then `validate_bundle(root, profile, model, early=run)` reads the manifest, the latent tables and the
    rest, and runs the steps left. Same findings as `validate_bundle` alone."""
    bundle = Bundle(root)
    data = BundleData(root=Path(root), model=model or load_model(), bundle=bundle, profile=profile)
    # the policies as the early steps read them; `validate_bundle` reads them again with the rest, and
    # reports what it finds wrong with them
    read = BundleData(root=data.root, model=data.model, bundle=bundle)
    read_policies(read)
    data.policies = read.policies
    return StagedRun(data, bundle)


def validate_bundle(
    root: Path | str,
    profile: str | Profile | None = None,
    model: OrgModel | None = None,
    staged: bool = True,
    early: StagedRun | None = None,
) -> Report:
    """Every finding about the bundle at `root` (checked against `profile`, default: the build's).

    `staged` (the default) reads one object after another, holding only what the running check reads
    (validators/staged.py); `staged=False` reads the whole org first and runs `CHECKS` on it. Both give the
    same findings. `early` is that staged run begun by `start_validation` with the same root, profile and
    model: its steps already run are not run again (their objects' files must not have changed since).

    The collector is paused throughout, and what the process holds on entry is frozen out of its walks
    (`heap_frozen`): the collections the staged checks ask for when they let go of a large object
    (`release_freed_memory`) then walk only what validation made, not the modules and caches before it."""
    with gc_paused(), heap_frozen():
        return _validate(root, profile, model, staged, early)


def _validate(
    root: Path | str,
    profile: str | Profile | None,
    model: OrgModel | None,
    staged: bool,
    early: StagedRun | None = None,
) -> Report:
    started = time.perf_counter()
    if early is not None and staged:
        data = early.data
        begun_with = (data.profile, data.policies)
        read_bundle_files(data, profile, latent=False)  # the staged run reads them when a step needs them
        if data.manifest is None or (data.profile, data.policies) != begun_with:
            # no check runs, or they run against other policies or another profile: the early steps do not count
            early, data = None, load_bundle(root, profile, model, objects=False, latent=False)
    else:
        early = None
        data = load_bundle(root, profile, model, objects=not staged, latent=not staged)
    report = Report(bundle=str(root), timings={"load": round(time.perf_counter() - started, 4)})
    findings: list[Finding] = []
    objects = {name: len(frame) for name, frame in data.raw.items()}
    if data.manifest is None:
        report.skipped.append("every check: the bundle has no readable manifest")
    elif staged:
        assert data.bundle is not None
        outcome = early.finish() if early is not None else run_checks(data, data.bundle)
        findings.extend(outcome.findings)
        objects = outcome.objects
        for name, seconds in outcome.timings.items():
            report.timings[name] = round(report.timings.get(name, 0.0) + seconds, 4)
        report.skipped.extend(_skipped(data, set(objects)))
    else:
        for name, check in CHECKS:
            t = time.perf_counter()
            findings.extend(check(data))
            report.timings[name] = round(time.perf_counter() - t, 4)
        report.skipped.extend(_skipped(data, set(objects)))
    findings = [*data.problems, *findings]
    unique = list(dict.fromkeys(data.relocate(f) for f in findings))
    report.findings = sorted(drop_covered(unique), key=_order)
    report.records = sum(objects.values())
    report.objects = objects
    report.timings["total"] = round(time.perf_counter() - started, 4)
    return report


def _skipped(data: BundleData, readable: set[str]) -> list[str]:
    out = [
        f"{spec.name}: data/{spec.name}.csv is unreadable, so no check could read it"
        for spec in data.model
        if spec.name not in readable
    ]
    if data.profile is None:
        out.append("integrity.cardinality and rules.time-span: no profile to take bounds and the span from")
    missing = [f"latent/{name}.csv" for name in LATENT_OBJECTS if name not in data.latent_read]
    if data.policies is None:
        missing.append(POLICIES)
    if missing:
        out.append(f"the latent content checks that read {', '.join(missing)}: missing or unreadable")
    return out


def write_report(report: Report, root: Path | str | None = None) -> Path | None:
    """Write `reports/validation.json` into the bundle; nothing when the folder is not a bundle."""
    bundle = Bundle(root if root is not None else report.bundle)
    if not bundle.manifest_path.exists():
        return None
    bundle.write_json(REPORT_PATH, report.to_json())
    return bundle.path(REPORT_PATH)
