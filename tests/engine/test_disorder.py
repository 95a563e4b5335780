"""Out-of-order input under a watermark strategy: records within the bound wait and count, late
and future ones go to the dead letters, judged per partition from its own records alone; the
same results and dead letters straight, restored from a snapshot at any round, or with
partitions split off to another instance. Against brute force over the records a per-partition
reference judge accepts."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.plan import Plan, PlanError, parse_plan
from streamshift_engine.plan.model import WatermarkSpec
from streamshift_engine.plan.parse import plan_document
from streamshift_engine.runner import Instance

from engine import harness, references
from engine.harness import Record, Run, canonical, partitioned_records, to_batch
from engine.plans import AGGREGATES, FIELDS, PARTITIONS, aggregate_plan

Letter = tuple[str, int, int, str]


def arrive_out_of_order(records: list[Record], jitter: int, late: float, seed: int) -> list[Record]:
    """Each partition's records in a new arrival order (offsets renumbered): each arrives up to
    `jitter` ms after its event time, a fraction `late` of them up to ten times that."""
    chooser = random.Random(seed)
    out = []
    for source, partition in sorted({(r.source, r.partition) for r in records}):
        part = [r for r in records if (r.source, r.partition) == (source, partition)]
        delays = [chooser.randint(0, jitter * (10 if chooser.random() < late else 1)) for _ in part]
        order = sorted(range(len(part)), key=lambda i: (part[i].ts + delays[i], i))
        for offset, i in enumerate(order):
            out.append(Record(source, partition, offset, part[i].ts, part[i].fields))
    return out


def judge(
    records: list[Record], delay: int, max_future: int | None
) -> tuple[list[Record], Counter[Letter]]:
    """The reference judge: per partition in offset order, a record below the largest event
    time accepted so far minus `delay` is late, one more than `max_future` above that is
    future; the rest are accepted and move the largest event time."""
    accepted, letters = [], Counter[Letter]()
    largest: dict[tuple[str, int], int] = {}
    for record in sorted(records, key=lambda r: (r.source, r.partition, r.offset)):
        place = (record.source, record.partition)
        before = largest.get(place)
        if before is not None and record.ts < before - delay:
            letters[(record.source, record.partition, record.offset, "late")] += 1
        elif (
            before is not None
            and max_future is not None
            and record.ts > before - delay + max_future
        ):
            letters[(record.source, record.partition, record.offset, "future")] += 1
        else:
            accepted.append(record)
            largest[place] = max(record.ts, before if before is not None else record.ts)
    return accepted, letters


def _tracked(used: list[Instance]) -> type[Instance]:
    """`Instance`, each one created appended to `used`."""

    class Tracked(Instance):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            used.append(self)

    return Tracked


def _runs(plan: Plan, records: list[Record], chunk: int, cut: int) -> dict[str, Any]:
    """Per way of running (`Run.straight`, `restarted`, `split`): the canonical results and
    the dead letters of every instance the run used."""
    outcomes = {}
    for name in ("straight", "restarted", "split"):
        used: list[Instance] = []
        run = Run(plan, records, chunk, range(PARTITIONS))
        with patch.object(harness, "Instance", _tracked(used)):
            if name == "straight":
                results = run.straight()
            elif name == "restarted":
                results = run.restarted(cut)
            else:
                results = run.split(cut, {0, 2})
        letters = Counter(
            (d.source, d.partition, d.offset, d.reason) for i in used for d in i.dead_letters
        )
        outcomes[name] = (canonical(results), letters)
    return outcomes


@settings(max_examples=60, deadline=None)
@given(
    records=partitioned_records(["S"], PARTITIONS, FIELDS, max_records=25, max_gap=1_500),
    bound=st.sampled_from([0, 500, 2_000]),
    lateness=st.sampled_from([0, 700]),
    max_future=st.sampled_from([None, 4_000]),
    late=st.sampled_from([0.0, 0.2]),
    seed=st.integers(0, 1_000),
    window=st.sampled_from(
        [
            {"kind": "time", "size": 4000, "slide": 4000},
            {"kind": "time", "size": 6000, "slide": 2000},
            {"kind": "rows", "size": 3, "slide": 2},
            {"kind": "rows", "size": 5, "slide": 1},
        ]
    ),
    chunk=st.integers(1, 6),
    cut=st.integers(0, 8),
)
def test_disordered_input_matches_the_reference_judge_straight_restored_and_split(
    records: list[Record],
    bound: int,
    lateness: int,
    max_future: int | None,
    late: float,
    seed: int,
    window: dict[str, Any],
    chunk: int,
    cut: int,
) -> None:
    arrived = arrive_out_of_order(records, 1_500, late, seed)
    if max_future is not None:  # a few records far ahead: a clock gone wrong
        chooser = random.Random(seed)
        arrived = [
            Record(r.source, r.partition, r.offset, r.ts + 50_000, r.fields)
            if chooser.random() < 0.05
            else r
            for r in arrived
        ]
    watermark: dict[str, Any] = {"out_of_orderness": bound, "allowed_lateness": lateness}
    if max_future is not None:
        watermark["max_future"] = max_future
    plan = aggregate_plan(window, ["k"], watermark)
    accepted, letters = judge(arrived, bound + lateness, max_future)
    if window["kind"] == "time":
        size, slide = window["size"], window["slide"]
        expected = references.time_windows("agg", accepted, size, slide, ["k"], AGGREGATES)
    else:
        expected = references.rows_windows(
            "agg", accepted, ["S"], window["size"], window["slide"], ["k"], AGGREGATES
        )
    for name, (results, dead) in _runs(plan, arrived, chunk, cut).items():
        assert results == expected, name
        assert dead == letters, name


def test_a_record_within_the_bound_is_not_late_and_waits_for_the_watermark() -> None:
    plan = aggregate_plan(
        {"kind": "time", "size": 1000, "slide": 1000}, [], {"out_of_orderness": 500}
    )
    instance = Instance(plan, [0])
    rows = [(0, 900), (1, 1400), (2, 950), (3, 1600), (4, 800)]  # (offset, ts); 800 is late
    batch_records = [Record("S", 0, o, t, {"k": 0, "v": 1}) for o, t in rows]
    instance.feed("S", 0, to_batch("S", batch_records, ["k", "v"]))
    assert instance.watermark() == 1100
    first = instance.poll()
    assert [row[:3] for row in canonical(first)] == [("agg|0|1000|", 0, 1000)]
    assert dict(canonical(first)[0][5])["n"] == 2  # 900 and 950; 800 came after 1600
    assert [(d.offset, d.reason) for d in instance.dead_letters] == [(4, "late")]
    assert instance.covered() == {("S", 0): 1}  # 1400 (offset 1) still waits
    assert instance.max_released == {("S", 0): 900}


def test_a_record_far_in_the_future_does_not_move_the_watermark() -> None:
    plan = aggregate_plan(
        {"kind": "time", "size": 1000, "slide": 1000},
        [],
        {"out_of_orderness": 500, "max_future": 60_000},
    )
    instance = Instance(plan, [0])
    ts = [1000, 1200, 31_536_000_000, 1300, 2500]
    records = [Record("S", 0, o, t, {"k": 0, "v": 1}) for o, t in enumerate(ts)]
    instance.feed("S", 0, to_batch("S", records, ["k", "v"]))
    assert [(d.offset, d.reason) for d in instance.dead_letters] == [(2, "future")]
    assert instance.watermark() == 2000
    totals = {row[0]: dict(row[5])["n"] for row in canonical(instance.poll() + instance.flush())}
    assert totals == {"agg|1000|2000|": 3, "agg|2000|3000|": 1}


def test_without_a_strategy_a_plan_keeps_the_strict_default() -> None:
    plan = aggregate_plan({"kind": "time", "size": 1000, "slide": 1000}, [], {})
    assert plan.inputs[0].watermark.delay == 0 and plan.inputs[0].watermark.max_future is None
    instance = Instance(plan, [0])
    ts = [1000, 1200, 1100]
    records = [Record("S", 0, o, t, {"k": 0, "v": 1}) for o, t in enumerate(ts)]
    instance.feed("S", 0, to_batch("S", records, ["k", "v"]))
    assert [(d.offset, d.reason) for d in instance.dead_letters] == [(2, "late")]


def test_a_strategy_round_trips_through_the_plan_document() -> None:
    watermark = {"out_of_orderness": 2000, "allowed_lateness": 500, "max_future": 60_000}
    plan = aggregate_plan({"kind": "time", "size": 1000, "slide": 1000}, [], watermark)
    assert plan.inputs[0].watermark == WatermarkSpec(2000, 500, None, 60_000)
    assert plan.inputs[0].watermark.delay == 2500
    document = plan_document(plan)
    assert document["inputs"][0]["watermark"] == watermark
    assert parse_plan(document) == plan
    strict = aggregate_plan({"kind": "time", "size": 1000, "slide": 1000}, [], {})
    assert "watermark" not in plan_document(strict)["inputs"][0]


@pytest.mark.parametrize(
    ("watermark", "field"),
    [
        ({"out_of_orderness": -1}, "watermark.out_of_orderness"),
        ({"allowed_lateness": 1.5}, "watermark.allowed_lateness"),
        ({"idle_timeout": 0}, "watermark.idle_timeout"),
        ({"max_future": 1000, "out_of_orderness": 1000}, "watermark.max_future"),
        ({"bound": 3}, "watermark.bound"),
    ],
)
def test_a_bad_strategy_is_refused_naming_the_field(watermark: dict[str, Any], field: str) -> None:
    with pytest.raises(PlanError) as error:
        aggregate_plan({"kind": "time", "size": 1000, "slide": 1000}, [], watermark)
    assert error.value.field == field and error.value.node == "S"


def test_carried_positions_continue_as_a_restored_snapshot_does() -> None:
    window = {"kind": "time", "size": 2000, "slide": 2000}
    plan = aggregate_plan(window, ["k"], {"out_of_orderness": 1500})
    ts = [1000, 2500, 1200, 4000, 2600, 900, 5200, 3900, 6100, 4500, 7000, 5600, 2000, 8000]
    records = [Record("S", 0, o, t, {"k": 0, "v": o}) for o, t in enumerate(ts)]
    old = Instance(plan, [0])
    old.feed("S", 0, to_batch("S", records[:8], ["k", "v"]))
    before = canonical(old.poll())
    assert old.covered()[("S", 0)] == 3  # 4000 (offset 3) waits, 2600 (offset 4) was released
    restored = Instance(plan, [0])
    restored.restore(old.snapshot())
    carried = Instance(plan, [0])
    carried.pipeline.restore(old.pipeline.snapshot())
    carried.carry_positions(old)
    outputs = []
    for instance in (restored, carried):
        start = instance.covered()[("S", 0)]
        instance.feed("S", 0, to_batch("S", records[start:], ["k", "v"]))
        results = canonical(instance.poll() + instance.flush())
        letters = [(d.offset, d.reason) for d in instance.dead_letters]
        outputs.append((results, letters))
    assert outputs[0] == outputs[1]
    whole = Instance(plan, [0])
    whole.feed("S", 0, to_batch("S", records, ["k", "v"]))
    assert sorted(before + outputs[0][0]) == canonical(whole.poll() + whole.flush())
    earlier = [(d.offset, d.reason) for d in old.dead_letters]
    assert earlier == [(5, "late")]  # 900, and not again when read again from offset 3
    assert earlier + outputs[0][1] == [(d.offset, d.reason) for d in whole.dead_letters]
