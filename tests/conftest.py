"""Each test's call-phase report on its item (`call_report.CALL`), for the stack tests' fixtures
that keep a failed test's evidence."""

from __future__ import annotations

from collections.abc import Generator

import pytest
from call_report import CALL


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[CALL] = report
    return report
