"""The worker loop's liveness without the stack: alive while it fetches and either gets records
or has nothing waiting; not alive when it stops fetching, or when input waits and no fetch
returns it; alive until the first fetch (the worker restores its state first)."""

from __future__ import annotations

from streamshift_engine.runtime.liveness import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_loop_that_fetches_records_or_has_nothing_to_do_is_alive() -> None:
    clock = Clock()
    progress = Progress(30, clock)
    clock.now += 300  # restoring state: no fetch yet
    assert progress.problem() is None
    for _ in range(10):
        clock.now += 10
        progress.fetch_returned(True, lambda: True)
        assert progress.problem() is None
    for _ in range(10):
        clock.now += 10
        progress.fetch_returned(False, lambda: False)  # idle: nothing waits
        assert progress.problem() is None


def test_a_loop_that_stops_fetching_is_not_alive() -> None:
    clock = Clock()
    progress = Progress(30, clock)
    progress.fetch_returned(True, lambda: True)
    clock.now += 29
    assert progress.problem() is None
    clock.now += 2
    assert progress.problem() == "the worker loop has not fetched input for 31 s"


def test_input_that_waits_while_fetches_return_nothing_is_not_alive() -> None:
    clock = Clock()
    progress = Progress(30, clock)
    progress.fetch_returned(True, lambda: True)
    asked: list[bool] = []

    def waiting() -> bool:
        asked.append(True)
        return True

    for _ in range(4):
        clock.now += 10
        progress.fetch_returned(False, waiting)
    assert len(asked) == 4
    assert progress.problem() == "input has waited 40 s and no fetch returned it"
    progress.fetch_returned(True, waiting)  # records again: alive, and nothing asked
    assert progress.problem() is None and len(asked) == 4
