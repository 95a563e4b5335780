"""The replay rule: a replayed result is suppressed exactly when its committer emitted it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

from streamshift_engine.events.results import results_from_mapping
from streamshift_engine.runtime.loop import Worker
from streamshift_engine.runtime.recovery import unseen


def test_unseen_keeps_windows_after_the_committers_watermark() -> None:
    worker = cast(Worker, SimpleNamespace(emitted_below={0: 100, 1: None}))
    results = results_from_mapping(
        "q",
        {
            "partition": [0, 0, 0, 0, 1],
            "window_start": [80, 90, -1, -1, 0],
            "window_end": [100, 110, -1, -1, 10],
            "min_ts": [80, 90, 50, 60, 0],
            "max_ts": [99, 109, 99, 100, 9],
            "keys": {"k": [1, 2, 3, 4, 5]},
            "values": {"v": [0, 0, 0, 0, 0]},
        },
    )
    kept = unseen(worker, [results])
    assert [r["k"] for batch in kept for r in batch.rows()] == [2, 4, 5]
