"""A Migration's verification runs on a thread of lowered priority: it replays the whole input,
and the queries it verifies come first where they share cores."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

import pytest
from streamshift_operator.migration import verification


def test_the_verification_runs_at_lowered_priority_and_the_loop_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def priority(*_: Any) -> tuple[int, str]:
        me = threading.current_thread()
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id()), me.name

    monkeypatch.setattr(verification, "verify", priority)
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    niceness, name = asyncio.run(verification.verify_in_background(Any, {}, Any, 0))  # type: ignore[arg-type]
    assert niceness == verification.VERIFY_NICE > before
    assert name.startswith("verify")
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before
