"""Fixtures for the validator tests: the small bundle loaded once, and its clean report."""

from __future__ import annotations

from pathlib import Path

import pytest

from validators.findings import Report
from validators.load import BundleData, load_bundle
from validators.run import validate_bundle


@pytest.fixture(scope="session")
def small_data(small_bundle: Path) -> BundleData:
    return load_bundle(small_bundle)


@pytest.fixture(scope="session")
def small_report(small_bundle: Path) -> Report:
    return validate_bundle(small_bundle)
