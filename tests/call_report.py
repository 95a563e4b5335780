"""A test's call-phase report, kept on its item by the hook in `tests/conftest.py`, so a fixture's
teardown can tell a failed test and keep its evidence before it deletes what the test made."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamshift_dev.workers import cache_dir

CALL = pytest.StashKey[pytest.TestReport]()


def failure(request: pytest.FixtureRequest) -> str | None:
    """The failure of the test `request` serves, or None when its call passed or did not run."""
    report = request.node.stash.get(CALL, None)
    return report.longreprtext if report is not None and report.failed else None


def evidence_folder() -> Path:
    """Where failed stack tests leave their evidence (CI keeps the log folder)."""
    folder = cache_dir() / "log" / "test-failures"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
