"""Commit cadence: output waits the output interval, input positions alone the longer one,
and a parallel-track origin commits at the short interval until its track is done."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

from streamshift_engine.runtime.loop import Worker
from streamshift_engine.runtime.parallel_track import Track


def _worker(track: Track | None = None) -> SimpleNamespace:
    config = SimpleNamespace(commit_interval_s=0.5, output_commit_interval_s=0.1)
    return SimpleNamespace(config=config, dirty=False, track=track)


def test_output_is_committed_sooner_than_positions_alone() -> None:
    worker = _worker()
    assert Worker.commit_due(cast(Worker, worker)) == 0.5
    worker.dirty = True
    assert Worker.commit_due(cast(Worker, worker)) == 0.1


def test_an_origin_followed_by_its_target_commits_at_the_short_interval() -> None:
    origin = Track("m", "origin", frozenset({2, 3}), split=1000)
    worker = _worker(origin)
    assert Worker.commit_due(cast(Worker, worker)) == 0.1
    origin.done = True
    assert Worker.commit_due(cast(Worker, worker)) == 0.5


def test_a_target_keeps_the_long_interval_for_positions_alone() -> None:
    worker = _worker(Track("m", "target", frozenset({2, 3}), split=1000, holding=True))
    assert Worker.commit_due(cast(Worker, worker)) == 0.5
