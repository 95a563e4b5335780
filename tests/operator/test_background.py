"""The verification's child processes run at the lowest CPU priority, so the workers and the
broker on the node come first."""

from __future__ import annotations

import os

from streamshift_operator.migration.background import NICENESS, pool


def test_the_verification_children_run_at_the_lowest_priority() -> None:
    assert os.getpriority(os.PRIO_PROCESS, 0) < NICENESS
    child = pool().submit(os.getpriority, os.PRIO_PROCESS, 0).result(timeout=60)
    assert child == NICENESS
    assert pool().submit(os.getpid).result(timeout=60) != os.getpid()
