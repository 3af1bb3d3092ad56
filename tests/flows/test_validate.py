"""`orgseed validate` and the validation step of `orgseed build`: exit codes, report file, manifest."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.build import BuildOptions, build_bundle
from flows.cli import app
from generator.pipeline import LocalExecutor
from orgs.bundle import staging_path
from tests.conftest import FIXTURES, copy_bundle
from validators.findings import ValidationFailed
from validators.run import REPORT_PATH, validate_bundle

runner = CliRunner()


def test_default_bundle_validates_clean(default_bundle: Path) -> None:
    manifest = json.loads((default_bundle / "manifest.json").read_text())
    assert manifest["validated"] is True
    assert manifest["validation"]["errors"] == 0
    assert manifest["timings"]["validation_seconds"] > 0
    report = validate_bundle(default_bundle)
    assert report.exit_code == 0
    assert report.errors == 0 and report.fatal == 0
    assert {f.rule for f in report.findings} <= {"text.near-duplicate"}
    assert report.records == sum(manifest["counts"].values())


def test_validate_command_writes_the_report_and_exits_0(small_bundle: Path, tmp_path: Path) -> None:
    bundle = copy_bundle(small_bundle, tmp_path / "b")
    (bundle / REPORT_PATH).unlink()
    result = runner.invoke(app, ["validate", str(bundle)])
    assert result.exit_code == 0, result.output
    written = json.loads((bundle / REPORT_PATH).read_text())
    again = validate_bundle(bundle).to_json()
    assert written["findings"] == again["findings"]
    assert written["ok"] is True
    assert "records checked" in result.output


def test_validate_command_exits_1_on_errors_and_tables_them(small_bundle: Path, tmp_path: Path) -> None:
    bundle = copy_bundle(small_bundle, tmp_path / "b")
    path = bundle / "data" / "Case.csv"
    lines = path.read_text().split("\n")
    lines[1] = lines[1].replace(",Closed,", ",Shut,", 1)
    path.write_text("\n".join(lines))
    manifest = json.loads((bundle / "manifest.json").read_text())
    from orgs.bundle import sha256_file

    manifest["files"]["data/Case.csv"] = sha256_file(path)
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    result = runner.invoke(app, ["validate", str(bundle)])
    assert result.exit_code == 1, result.output
    assert "schema.picklist" in result.output
    findings = json.loads((bundle / REPORT_PATH).read_text())["findings"]
    assert any(f["rule"] == "schema.picklist" and f["line"] == 2 and f["field"] == "Status" for f in findings)


def test_validate_command_exits_2_on_an_unreadable_csv(small_bundle: Path, tmp_path: Path) -> None:
    bundle = copy_bundle(small_bundle, tmp_path / "b")
    path = bundle / "data" / "Order.csv"
    lines = path.read_text().split("\n")
    lines[4] = lines[4].rsplit(",", 2)[0]
    path.write_text("\n".join(lines))
    result = runner.invoke(app, ["validate", str(bundle)])
    assert result.exit_code == 2
    assert "Order.csv:5" in result.output
    assert "hash" in result.output.lower() or "SHA-256" in result.output


def test_validate_command_exits_2_without_a_manifest_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 2
    assert "manifest.json is missing" in result.output
    assert not (tmp_path / "reports").exists()


def test_validate_command_takes_an_explicit_profile(small_bundle: Path, tmp_path: Path) -> None:
    bundle = copy_bundle(small_bundle, tmp_path / "b")
    strict = FIXTURES / "profiles" / "strict_bounds.toml"
    result = runner.invoke(app, ["validate", str(bundle), "--profile", str(strict)])
    assert result.exit_code == 1
    assert "integrity.cardinality" in result.output


def test_build_fails_on_validation_errors_and_marks_the_manifest(tmp_path: Path) -> None:
    out = tmp_path / "strict"
    opts = BuildOptions(
        profile=str(FIXTURES / "profiles" / "strict_bounds.toml"), out=str(out), force=True, engine="local"
    )
    with pytest.raises(ValidationFailed) as info:
        asyncio.run(build_bundle(opts, LocalExecutor()))
    assert info.value.report.errors > 0
    assert {f.rule for f in info.value.report.findings if f.severity.value == "error"} == {
        "integrity.cardinality"
    }
    staged = staging_path(out)  # a failed build is left in its staging folder; --out is not touched
    assert not out.exists()
    manifest = json.loads((staged / "manifest.json").read_text())
    assert manifest["validated"] is False and manifest["status"] == "invalid"
    assert manifest["validation"]["errors"] == info.value.report.errors
    assert (staged / REPORT_PATH).exists() and info.value.report_path == str(staged / REPORT_PATH)


def test_build_command_exits_1_on_validation_errors(tmp_path: Path) -> None:
    strict = FIXTURES / "profiles" / "strict_bounds.toml"
    result = runner.invoke(
        app, ["build", "--no-prefect", "--profile", str(strict), "--out", str(tmp_path / "b"), "--force"]
    )
    assert result.exit_code == 1
    assert "failed validation" in result.output
    assert "with --resume to continue" in " ".join(result.output.split())
    assert "integrity.cardinality" in result.output


def test_build_command_stops_on_a_bound_no_org_of_its_counts_can_meet(tmp_path: Path) -> None:
    impossible = FIXTURES / "profiles" / "impossible_bounds.toml"
    out = tmp_path / "b"
    result = runner.invoke(app, ["build", "--no-prefect", "--profile", str(impossible), "--out", str(out)])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    # the fixture asks for 900 items in 300 orders of at most 1 item
    assert "OrderItem count 900 does not fit in 300 orders of at most 1 item(s) each (300 in all" in said
    assert "[bounds.OrderItem] OrderId" in said
    assert f"raise the bound in {impossible}" in said  # the file to edit
    assert not out.exists()  # nothing is published
    assert "The same command would stop the same way" in said  # not the bare advice to --resume
    assert "Run the same command with --resume" not in said
