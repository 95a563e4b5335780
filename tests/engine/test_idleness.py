"""Idle input partitions: left out of the watermark (marked, or after a timeout), and records
they bring once active again below the watermark already used go to the dead letters as late.
Against the brute-force time windows, with a snapshot restored at a random round."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.plan import parse_plan
from streamshift_engine.plan.parse import plan_document
from streamshift_engine.runner import Instance

from engine import references
from engine.harness import Record, canonical, partitioned_records, streams, to_batch
from engine.plans import AGGREGATES, FIELDS, PARTITIONS, aggregate_plan

SIZE = 4000
QUERY = aggregate_plan({"kind": "time", "size": SIZE, "slide": SIZE}, ["k"])
IDLE = 2
"""The partition that is idle at first and, in some examples, wakes up later."""
WAKE, TIMEOUT = 8, 5.0
"""The round the idle partition wakes up in, and the idle timeout (rounds are 1 s apart)."""


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _run(
    records: list[Record], late_records: list[Record], timed: bool, cut: int, chunk: int
) -> tuple[list[ResultBatch], list[ResultBatch], set[tuple[int, int]]]:
    """Rounds of `chunk` records per busy partition (the idle one fed `late_records` from
    round `WAKE` on), one clock second apart, restored from a snapshot after round `cut`.
    Returns the results polled before the flush, all results, and the dead letters'
    (partition, offset)."""
    clock = Clock()
    by_place = streams(records)
    feeds = {place: part for place, part in by_place.items() if place[1] != IDLE}
    if late_records:
        feeds[("S", IDLE)] = late_records
    fields = ["k", "v"]

    def fresh() -> Instance:
        instance = Instance(QUERY, range(PARTITIONS), TIMEOUT if timed else None, clock)
        if not timed:
            instance.mark_idle("S", IDLE)
        return instance

    instance, polled, dead = fresh(), [], set()
    rounds = max((len(p) + chunk - 1) // chunk for p in feeds.values()) + WAKE if feeds else 0
    for index in range(rounds):
        clock.now += 1.0
        for (source, partition), part in sorted(feeds.items()):
            first = index - WAKE if partition == IDLE else index
            piece = part[first * chunk : (first + 1) * chunk] if first >= 0 else []
            if piece:
                instance.feed(source, partition, to_batch(source, piece, fields))
        polled += instance.poll()
        if index == cut:
            dead |= {(d.partition, d.offset) for d in instance.dead_letters}
            restored = fresh()
            restored.restore(instance.snapshot())
            for (source, partition), part in sorted(feeds.items()):
                start = restored.covered().get((source, partition), 0)
                first = index - WAKE if partition == IDLE else index
                fed = part[: (first + 1) * chunk] if first >= 0 else []
                if len(fed) > start:
                    restored.feed(source, partition, to_batch(source, fed[start:], fields))
            instance = restored
            polled += instance.poll()
    dead |= {(d.partition, d.offset) for d in instance.dead_letters}
    return polled, polled + instance.flush(), dead


@settings(max_examples=40, deadline=None)
@given(
    records=partitioned_records(["S"], PARTITIONS, FIELDS, max_records=25),
    timed=st.booleans(),
    wakes=st.booleans(),
    cut=st.integers(0, 8),
    chunk=st.integers(1, 5),
)
def test_an_idle_partition_does_not_hold_the_watermark(
    records: list[Record], timed: bool, wakes: bool, cut: int, chunk: int
) -> None:
    busy = [r for r in records if r.partition != IDLE]
    late = [r for r in records if r.partition == IDLE] if wakes else []
    _, results, dead = _run(busy + late, late, timed, cut, chunk)
    kept = [r for r in busy + late if (r.partition, r.offset) not in dead or r.partition != IDLE]
    expected = references.time_windows("agg", kept, SIZE, SIZE, ["k"], AGGREGATES)
    assert canonical(results) == expected
    assert all(partition == IDLE for partition, _ in dead)
    ends = [r.ts for r in busy if r.partition == 0], [r.ts for r in busy if r.partition == 1]
    if all(ends):
        watermark = min(max(ends[0]), max(ends[1]))
        busy_only = references.time_windows("agg", busy, SIZE, SIZE, ["k"], AGGREGATES)
        due = [row for row in busy_only if row[2] <= watermark]
        polled, _, _ = _run(busy, [], timed, -1, chunk)
        assert set(due) <= set(canonical(polled)), "windows fire before the end of input"


def test_records_of_a_woken_partition_below_the_watermark_are_late() -> None:
    clock = Clock()
    instance = Instance(QUERY, [0, 1], idle_timeout=5.0, clock=clock)
    busy = [Record("S", 0, i, 1000 * i, {"k": 0, "v": 1}) for i in range(10)]
    clock.now = 4.0
    instance.feed("S", 0, to_batch("S", busy, ["k", "v"]))
    assert instance.watermark() is None
    clock.now = 6.0
    assert instance.watermark() == 9000
    fired = instance.poll()
    assert [row[:3] for row in canonical(fired)] == [
        ("agg|0|4000|0", 0, 4000),
        ("agg|4000|8000|0", 4000, 8000),
    ]
    clock.now = 6.5
    woken = [Record("S", 1, i, ts, {"k": 1, "v": 1}) for i, ts in enumerate([3000, 8500, 12000])]
    instance.feed("S", 1, to_batch("S", woken, ["k", "v"]))
    letters = [(d.partition, d.offset, d.reason) for d in instance.dead_letters]
    assert letters == [(1, 0, "late"), (1, 1, "late")]
    assert instance.watermark() == 9000
    clock.now = 20.0
    assert instance.watermark() == 9000, "all idle: the watermark last used holds"
    rest: list[Any] = instance.poll() + instance.flush()
    assert [row[:3] for row in canonical(rest)] == [
        ("agg|12000|16000|1", 12000, 16000),
        ("agg|8000|12000|0", 8000, 12000),
    ]


def test_the_plan_strategy_sets_the_idle_timeout_per_input() -> None:
    document = plan_document(QUERY)
    document["inputs"][0]["watermark"] = {"idle_timeout": TIMEOUT}
    clock = Clock()
    instance = Instance(parse_plan(document), [0, 1], clock=clock)
    busy = [Record("S", 0, i, 1000 * i, {"k": 0, "v": 1}) for i in range(10)]
    clock.now = TIMEOUT - 1
    instance.feed("S", 0, to_batch("S", busy, ["k", "v"]))
    assert instance.watermark() is None  # partition 1 not idle yet
    clock.now = TIMEOUT + 1
    assert instance.watermark() == 9000
    assert Instance(QUERY, [0, 1], clock=clock).idle_timeouts == {"S": None}
