"""Commit cadence: output waits the output interval, input positions alone the longer one,
and an origin whose target follows its commits (a parallel-track origin until its track is
done) commits at the short interval."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

from streamshift_engine.migration.parallel_track_roles import TrackOrigin, TrackTarget
from streamshift_engine.migration.role import Role
from streamshift_engine.runtime.loop import Worker


def _worker(*roles: Role) -> SimpleNamespace:
    config = SimpleNamespace(commit_interval_s=0.5, output_commit_interval_s=0.1)
    worker = SimpleNamespace(config=config, dirty=False, roles={r.migration: r for r in roles})
    worker.active_roles = lambda: Worker.active_roles(cast(Worker, worker))
    return worker


def _role(kind: type[Role], migration: str) -> Role:
    role = kind.__new__(kind)
    Role.__init__(role, migration, frozenset({2, 3}))
    return role


def test_output_is_committed_sooner_than_positions_alone() -> None:
    worker = _worker()
    assert Worker.commit_due(cast(Worker, worker)) == 0.5
    worker.dirty = True
    assert Worker.commit_due(cast(Worker, worker)) == 0.1


def test_an_origin_followed_by_its_target_commits_at_the_short_interval() -> None:
    origin = _role(TrackOrigin, "m")
    worker = _worker(origin)
    assert Worker.commit_due(cast(Worker, worker)) == 0.1
    origin.done = True
    assert Worker.commit_due(cast(Worker, worker)) == 0.5


def test_a_target_keeps_the_long_interval_for_positions_alone() -> None:
    worker = _worker(_role(TrackTarget, "m"))
    assert Worker.commit_due(cast(Worker, worker)) == 0.5
