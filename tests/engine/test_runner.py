"""The instance: watermark release, late records to the dead letters, positions, snapshots."""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.plan import builtin
from streamshift_engine.runner import Instance, collect
from streamshift_engine.state.codec import SnapshotError


def s_batch(rows: list[tuple[int, int]], first_offset: int = 0, partition: int = 0) -> Batch:
    ts = np.array([r[0] for r in rows], np.int64)
    return Batch(
        "S",
        ts,
        np.full(len(rows), partition, np.int32),
        np.arange(first_offset, first_offset + len(rows), dtype=np.int64),
        {"ts": ts, "l": np.ones(len(rows), np.int64), "m": np.array([r[1] for r in rows])},
    )


def test_a_late_record_goes_to_the_dead_letters_and_the_query_continues() -> None:
    instance = Instance(builtin("q2"), [0])
    instance.feed("S", 0, s_batch([(1000, 1), (3000, 2), (2000, 99), (4000, 4)]))
    results = instance.poll() + instance.flush()
    assert [r["sum"] for r in collect(results)] == [1, 3, 7]
    assert instance.counters["late"] == 1
    [letter] = instance.dead_letters
    assert (letter.source, letter.partition, letter.offset, letter.reason) == ("S", 0, 2, "late")
    assert orjson.loads(letter.raw)["m"] == 99


def test_a_late_record_read_again_after_a_restore_is_not_dead_lettered_twice() -> None:
    instance = Instance(builtin("q2"), [0, 1])
    instance.feed("S", 0, s_batch([(1000, 1), (5000, 5), (3000, 99)]))
    instance.feed("S", 1, s_batch([(2000, 2)], partition=1))
    instance.poll()
    assert [(d.offset, d.reason) for d in instance.dead_letters] == [(2, "late")]
    restored = Instance(builtin("q2"), [0, 1])
    restored.restore(instance.snapshot())
    assert restored.covered() == {("S", 0): 1}
    again = Instance(builtin("q2"), [0, 1])
    again.restore(restored.snapshot())  # a snapshot before the records are read again
    for target in (restored, again):
        target.feed("S", 0, s_batch([(5000, 5), (3000, 99), (4000, 98), (6000, 6)], 1))
        target.feed("S", 1, s_batch([(2000, 2)], partition=1))
        assert [(d.offset, d.reason) for d in target.dead_letters] == [(3, "late")]
        assert target.counters["late"] == 1
        assert [r["sum"] for r in collect(target.flush())] == [3, 8, 14]


def test_records_wait_until_the_watermark_passes_them() -> None:
    instance = Instance(builtin("q2"), [0, 1])
    instance.feed("S", 0, s_batch([(1000, 1), (5000, 5)]))
    assert instance.poll() == []  # partition 1 has not been read: no watermark yet
    instance.feed("S", 1, s_batch([(2000, 2)], partition=1))
    assert [r["sum"] for r in collect(instance.poll())] == [1]  # watermark 2000 releases ts < 2000
    assert instance.positions() == {("S", 0): 2, ("S", 1): 1}
    assert instance.covered() == {("S", 0): 1}


def test_a_snapshot_holds_the_positions_it_covers_and_rejects_other_queries() -> None:
    instance = Instance(builtin("q2"), [0])
    instance.feed("S", 0, s_batch([(1000, 1), (2000, 2), (3000, 3)]))
    instance.poll()
    data = instance.snapshot()
    assert data.startswith(b"SSNAP")
    restored = Instance(builtin("q2"), [0])
    restored.restore(data)
    assert restored.covered() == {("S", 0): 2}
    restored.feed("S", 0, s_batch([(3000, 3), (4000, 4)], first_offset=2))
    assert [r["sum"] for r in collect(restored.flush())] == [6, 10]
    with pytest.raises(SnapshotError):
        Instance(builtin("q1"), [0]).restore(data)
    with pytest.raises(SnapshotError):
        restored.restore(b"not a snapshot")


def test_state_is_held_per_partition_and_dropped_by_partition() -> None:
    plan = builtin("smq")
    instance = Instance(plan, [0, 1, 2])
    for partition in (0, 1, 2):
        ts = np.array([100, 200], np.int64)
        keys = np.array([partition, partition + 3])
        batch = Batch(
            "numbers",
            ts,
            np.full(2, partition, np.int32),
            np.arange(2, dtype=np.int64),
            {"ts": ts, "key": keys, "value": np.zeros(2, np.int64)},
        )
        instance.feed("numbers", partition, batch)
    instance.flush()
    assert instance.pipeline.partitions() == {0, 1, 2}
    before = instance.state_bytes()
    moving = instance.snapshot([1])
    instance.drop([1])
    assert instance.pipeline.partitions() == {0, 2}
    assert 0 < instance.state_bytes() < before
    elsewhere = Instance(plan, [1])
    elsewhere.restore(moving)
    assert elsewhere.pipeline.partitions() == {1}
    assert elsewhere.covered() == {("numbers", 1): 2}
