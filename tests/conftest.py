"""Suite-wide hooks: the stack tests' naming scheme (a module named `test_*_stack.py` needs the
local stack, so each of its tests is marked `stack` and `make test-unit` leaves it out), and each
test's call-phase report on its item (`call_report.CALL`), for the stack tests' fixtures that keep
a failed test's evidence. Modules with a single stack test among pure ones mark that test."""

from __future__ import annotations

from collections.abc import Generator

import pytest
from call_report import CALL

STACK_SUFFIX = "_stack.py"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name.endswith(STACK_SUFFIX):
            item.add_marker(pytest.mark.stack)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[CALL] = report
    return report
