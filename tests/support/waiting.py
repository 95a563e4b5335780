"""A bounded wait for a condition, for the tests that watch a running stack."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from streamshift_dev import stack_driver


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0, every: float = 0.3) -> Any:
    """Poll `check` until it returns something truthy (returned); fail naming `what` and the
    last answer after `timeout` seconds (the stack driver's wait, as a test failure)."""
    try:
        return stack_driver.wait_for(what, check, timeout, every)
    except stack_driver.TimedOut as error:
        pytest.fail(str(error))
