"""A bounded wait for a condition, for the tests that watch a running stack."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0, every: float = 0.3) -> Any:
    """Poll `check` until it returns something truthy (returned); fail naming `what` after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")
