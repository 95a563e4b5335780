"""Commit cadence: output waits the output interval, input positions alone the longer one."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

from streamshift_engine.runtime.loop import Worker


def test_output_is_committed_sooner_than_positions_alone() -> None:
    config = SimpleNamespace(commit_interval_s=0.5, output_commit_interval_s=0.1)
    worker = SimpleNamespace(config=config, dirty=False)
    assert Worker.commit_due(cast(Worker, worker)) == 0.5
    worker.dirty = True
    assert Worker.commit_due(cast(Worker, worker)) == 0.1
