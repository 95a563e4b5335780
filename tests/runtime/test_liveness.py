"""The worker loop's liveness without the stack: alive while it fetches and each partition it
reads either returns records or has nothing waiting, and while what it feeds gets committed;
not alive when it stops fetching, when input waits on one partition and no fetch returns it
(also while the other partitions return records), or when it feeds on and no commit ends;
alive until the first fetch (the worker restores its state first)."""

from __future__ import annotations

from collections.abc import Collection

from streamshift_engine.runtime.liveness import Progress

A, B = ("bid", 0), ("bid", 1)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Waiting:
    """Which partitions have input waiting, and what was asked."""

    def __init__(self, *busy: tuple[str, int]) -> None:
        self.busy = set(busy)
        self.asked: list[list[tuple[str, int]]] = []

    def __call__(self, quiet: list[tuple[str, int]]) -> Collection[tuple[str, int]]:
        self.asked.append(quiet)
        return self.busy & set(quiet)


def test_a_loop_that_fetches_records_or_has_nothing_to_do_is_alive() -> None:
    clock = Clock()
    progress = Progress(30, 0.5, clock)
    clock.now += 300  # restoring state: no fetch yet
    assert progress.problem() is None
    for _ in range(10):
        clock.now += 10
        progress.fetch_returned([A, B], [A, B], Waiting(A, B))
        assert progress.problem() is None
    for _ in range(10):
        clock.now += 10
        progress.fetch_returned([], [A, B], Waiting())  # idle: nothing waits
        assert progress.problem() is None


def test_a_loop_that_stops_fetching_is_not_alive() -> None:
    clock = Clock()
    progress = Progress(30, 0.5, clock)
    progress.fetch_returned([A], [A], Waiting(A))
    clock.now += 29
    assert progress.problem() is None
    clock.now += 2
    assert progress.problem() == "the worker loop has not fetched input for 31 s"


def test_input_that_waits_while_fetches_return_nothing_is_not_alive() -> None:
    clock = Clock()
    progress = Progress(30, 0.5, clock)
    progress.fetch_returned([A], [A], Waiting(A))
    waiting = Waiting(A)
    for _ in range(4):
        clock.now += 10
        progress.fetch_returned([], [A], waiting)
    assert waiting.asked == [[A]] * 4
    assert progress.problem() == "input of bid partition 0 has waited 40 s and no fetch returned it"
    progress.fetch_returned([A], [A], waiting)  # records again: alive, and nothing asked
    assert progress.problem() is None and len(waiting.asked) == 4


def test_one_partition_whose_input_waits_while_the_others_return_records_is_not_alive() -> None:
    """Before, any records in a fetch counted as progress: a partition left paused for good
    inside the client (librdkafka 5591) went unnoticed while another one flowed."""
    clock = Clock()
    progress = Progress(30, 0.5, clock)
    progress.fetch_returned([A, B], [A, B], Waiting(A, B))
    waiting = Waiting(A, B)
    for _ in range(31):
        clock.now += 1
        progress.fetch_returned([A], [A, B], waiting)
    assert all(asked == [B] for asked in waiting.asked) and len(waiting.asked) == 31
    assert progress.problem() == "input of bid partition 1 has waited 31 s and no fetch returned it"


def test_partitions_are_looked_at_at_most_every_check_interval() -> None:
    clock = Clock()
    progress = Progress(5, 0.5, clock)  # checks every 0.5 s
    waiting = Waiting()
    for _ in range(100):  # a fetch every 10 ms, 1 s in all
        clock.now += 0.01
        progress.fetch_returned([], [A], waiting)
    assert len(waiting.asked) == 2 and progress.problem() is None


def test_a_paused_partition_waits_for_nothing_and_starts_its_clock_when_read_again() -> None:
    clock = Clock()
    progress = Progress(30, 0.5, clock)
    progress.fetch_returned([A, B], [A, B], Waiting(A, B))
    for _ in range(10):  # B paused at a migration's marker, with input past it
        clock.now += 10
        progress.fetch_returned([A], [A], Waiting(A, B))
    assert progress.problem() is None
    clock.now += 10
    progress.fetch_returned([A], [A, B], Waiting(A, B))  # B resumed: its clock starts now
    assert progress.problem() is None
    clock.now += 29
    progress.fetch_returned([A], [A, B], Waiting(A, B))
    assert progress.problem() is None
    clock.now += 2
    progress.fetch_returned([A], [A, B], Waiting(A, B))
    assert progress.problem() == "input of bid partition 1 has waited 31 s and no fetch returned it"


def test_a_loop_that_feeds_on_while_no_commit_ends_is_not_alive() -> None:
    """Before, a loop fetching and feeding records counted as alive even when its commit thread
    was blocked: output and positions (and the watermark readers see) stopped moving."""
    clock = Clock()
    progress = Progress(30, 0.5, clock)
    for _ in range(100):  # healthy: commits end every 0.5 s
        clock.now += 0.5
        progress.fetch_returned([A], [A], Waiting(A))
        progress.fed(replaying=False)
        progress.committed()
    assert progress.problem() is None
    for _ in range(62):  # the commit thread blocked: fed every 0.5 s, no commit ends
        clock.now += 0.5
        progress.fetch_returned([A], [A], Waiting(A))
        progress.fed(replaying=False)
        assert progress.problem() is None
    clock.now += 0.5
    progress.fetch_returned([A], [A], Waiting(A))
    progress.fed(replaying=False)
    assert progress.problem() == "input fed 31 s ago is not committed yet: commits stopped"
    progress.committed()
    assert progress.problem() is None


def test_a_broker_outage_that_stops_feeding_and_commits_is_given_the_transaction_timeout() -> None:
    """No feeding, no commit: the brokers are away (fetches return nothing, the commit retries)
    and the worker rides it out up to the transaction's timeout, not `stall_s`."""
    clock = Clock()
    progress = Progress(30, 0.5, clock)
    progress.fetch_returned([A], [A], Waiting(A))
    progress.fed(replaying=False)
    for _ in range(60):
        clock.now += 1
        progress.fetch_returned([], [A], Waiting())  # caught up when the brokers went away
    assert progress.problem() is None
    clock.now += 1
    progress.fetch_returned([], [A], Waiting())
    assert progress.problem() == "input fed 61 s ago is not committed yet: commits stopped"


def test_replayed_input_waits_for_no_commit() -> None:
    """A replay feeds input committed already; commits wait for its end, however long."""
    clock = Clock()
    progress = Progress(30, 0.5, clock)
    progress.fed(replaying=False)
    for _ in range(200):
        clock.now += 0.5
        progress.fetch_returned([A], [A], Waiting(A))
        progress.fed(replaying=True)
    assert progress.problem() is None
