"""The replay rule: a replayed result or dead letter is suppressed exactly when its committer
emitted it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import results_from_mapping
from streamshift_engine.events.wire import DeadLetter
from streamshift_engine.runtime.loop import Worker
from streamshift_engine.runtime.recovery import unseen, unseen_letters

from .harness import nexmark_input
from .stand_ins import PARTITIONS, sink_of, worker


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


def _late_at_end(batch: Batch, time_field: str) -> Batch:
    """`batch` with its last record moved 10 s before its first: late on its partition."""
    ts = batch.ts.copy()
    ts[-1] = ts[0] - 10_000
    columns = {**batch.columns, time_field: ts.astype(batch.columns[time_field].dtype)}
    return Batch(batch.source, ts, batch.partition, batch.offset, columns)


def test_unseen_letters_drops_only_records_below_their_committers_position() -> None:
    worker = cast(Worker, SimpleNamespace(limit={("person", 1): 27}))
    letters = [
        DeadLetter("person", 1, 12, "late", b"{}"),
        DeadLetter("person", 1, 27, "late", b"{}"),
        DeadLetter("auction", 1, 3, "late", b"{}"),
        DeadLetter("auction", 0, 17, "malformed", b"{"),
    ]
    kept = unseen_letters(worker, letters)
    assert [(d.source, d.partition, d.offset) for d in kept] == [
        ("person", 1, 27),
        ("auction", 1, 3),
        ("auction", 0, 17),
    ]


def test_a_replay_keeps_the_dead_letters_of_positions_it_does_not_replay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A state-moving target replays what its origin committed of one position while the same
    consume brings another position's first records, one of them late: that record's dead
    letter is new (its origin never read it), the replayed position's late record is not."""
    generated = nexmark_input(2_000, PARTITIONS)
    person = generated["person"].take(generated["person"].partition == 1)
    auction = generated["auction"].take(generated["auction"].partition == 0)
    replayed = _late_at_end(person.take(slice(0, 20)), "date_time")
    new = _late_at_end(auction.take(slice(0, 18)), "date_time")
    consume = {("person", 1): replayed, ("auction", 0): new}
    made = worker(monkeypatch, "nexmark-q8", [(consume, [])], None)
    made.limit = {("person", 1): 20}  # `recovery.resume`: the origin committed up to 20
    made.step(0.0)
    made.commit()
    letters = sink_of(made).commits[-1].letters
    assert letters == [("auction", 0, 17, "late")]
    assert made.phase != "replaying" and not made.limit
