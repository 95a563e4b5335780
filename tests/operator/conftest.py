"""Each test's call-phase report on its item (`failure_dump.CALL`), so a fixture's teardown can
tell a failed test and keep its evidence (`failure_dump.dump`) before deleting what it made."""

from __future__ import annotations

from collections.abc import Generator

import pytest
from failure_dump import CALL


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[CALL] = report
    return report
