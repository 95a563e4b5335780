"""A parallel-track target's held results released up to the origin's watermark: windowed
results are due at their window's end, results without a window after their newest tuple; once
released up to a watermark, results due by it are not held."""

from typing import Any, cast

import numpy as np
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.migration.parallel_track_roles import TrackTarget, due_by
from streamshift_engine.migration.port import InstancePort
from streamshift_engine.migration.role import Role


def results(window_end: list[int], max_ts: list[int]) -> ResultBatch:
    n = len(window_end)
    return ResultBatch(
        query="q",
        partition=np.zeros(n, np.int32),
        window_start=np.zeros(n, np.int64),
        window_end=np.array(window_end, np.int64),
        min_ts=np.zeros(n, np.int64),
        max_ts=np.array(max_ts, np.int64),
        keys={"k": np.arange(n)},
        values={},
    )


def test_windowed_results_are_due_at_their_window_end() -> None:
    held = [results([2_000, 4_000], [1_500, 3_900]), results([6_000], [5_000])]
    now, later = due_by(held, 4_000)
    assert [list(b.window_end) for b in now] == [[2_000, 4_000]]
    assert [list(b.window_end) for b in later] == [[6_000]]
    now, later = due_by(later, 5_999)
    assert now == [] and [list(b.window_end) for b in later] == [[6_000]]


def test_results_without_a_window_are_due_after_their_newest_tuple() -> None:
    held = [results([0, 0, 0], [99, 100, 101])]
    now, later = due_by(held, 101)
    assert [list(b.max_ts) for b in now] == [[99, 100]]
    assert [list(b.max_ts) for b in later] == [[101]]
    assert [list(b.keys["k"]) for b in later] == [[2]]


def new_results(window_end: list[int]) -> ResultBatch:
    """Results whose tuples are all from the split (1 000) on: the target's side."""
    batch = results(window_end, [end - 1 for end in window_end])
    batch.min_ts[:] = 1_000
    return batch


def test_a_target_holds_all_until_released_then_only_what_is_not_due() -> None:
    """Before any release a holding target holds every result it computes; once released up to
    a watermark, later results of windows ending by it go out with the step that computed them,
    the rest is held."""
    track = TrackTarget.__new__(TrackTarget)
    Role.__init__(track, "m", frozenset({0}))
    track.split, track.held, track.until = 1_000, [], None
    port = cast(InstancePort, cast(Any, None))
    assert track.on_output(port, [new_results([2_000])]) == []
    assert [list(b.window_end) for b in track.held] == [[2_000]]
    track.held, track.until = [], 4_000
    out = track.on_output(port, [new_results([2_000, 4_000, 6_000])])
    assert [list(b.window_end) for b in out] == [[2_000, 4_000]]
    assert [list(b.window_end) for b in track.held] == [[6_000]]
