"""A join's results do not depend on how its input is sliced: the same records fed in any
chunks, with polls anywhere, give the same results (ids, values, min/max timestamps) in the same
order, for range and rows joins, a join feeding an order-sensitive ROWS sum (seed Q3), and a
3-way join tree; the same as the per-run path that takes each input's records apart; and the
same when polls hold the pipeline until enough records came (`runner.Hold`)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.plan import parse_plan
from streamshift_engine.plan.builtin import builtin
from streamshift_engine.plan.join_trees import join_tree_plan
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Hold, Instance

from engine.harness import Record, partitioned_records, streams, to_batch
from engine.plans import join_plan

PARTITIONS = 2
SCHEMA = {"ts": "int", "k": "int", "m": "int"}


def seed_q3() -> Plan:
    document = builtin("q3")
    inputs = [{"name": n, "time_field": "ts", "key_field": "k", "schema": SCHEMA} for n in "ST"]
    join = {
        "id": "join",
        "type": "window_join",
        "inputs": ["S", "T"],
        "params": {"window": {"kind": "range", "size": 2_000}, "on": [["k", "k"]]},
    }
    rows = next(op for op in document.operators if op.id == "sum")
    total = {"id": "sum", "type": rows.type, "input": "join", "params": dict(rows.params)}
    operators = [join, total]
    return parse_plan({"name": "q3", "inputs": inputs, "operators": operators, "output": "sum"})


PLANS = {
    "range": join_plan({"kind": "range", "size": 2_000}, SCHEMA),
    "rows": join_plan({"kind": "rows", "size": 2}, SCHEMA),
    "seed-q3": seed_q3(),
    "tree": join_tree_plan("tree", (("S", "U"), "T"), 2_000, "k", SCHEMA),
}


def run(
    plan: Plan,
    records: list[Record],
    sizes: list[int],
    merged: bool = True,
    hold: int | None = None,
) -> list[Any]:
    """Feed each (input, partition) in chunks of the given sizes (cycled), round-robin, with a
    poll after each round; every result in output order. `hold`: polls run the pipeline only
    once that many records came since its last run (the clock stands still)."""
    holding = None if hold is None else Hold(records=hold, seconds=1.0)
    instance = Instance(plan, range(PARTITIONS), clock=lambda: 0.0, hold=holding)
    instance.pipeline.merges = merged
    fields = [f for f in SCHEMA if f != "ts"]
    pending = {place: list(rs) for place, rs in sorted(streams(records).items())}
    results: list[ResultBatch] = []
    step = 0
    while any(pending.values()):
        for (source, partition), queue in pending.items():
            size = sizes[step % len(sizes)]
            step += 1
            chunk, pending[(source, partition)] = queue[:size], queue[size:]
            if chunk:
                instance.feed(source, partition, to_batch(source, chunk, fields))
        results += instance.poll()
    results += instance.flush()
    return [
        (rid, low, high, row)
        for batch in results
        for rid, low, high, row in zip(
            batch.ids(), batch.min_ts.tolist(), batch.max_ts.tolist(), batch.rows(), strict=True
        )
    ]


records = partitioned_records(
    ["S", "T", "U"],
    PARTITIONS,
    {"k": st.integers(0, 2), "m": st.integers(0, 9)},
    max_records=14,
    max_gap=1_500,
)


@settings(max_examples=40, deadline=None)
@given(
    records=records,
    plan=st.sampled_from(sorted(PLANS)),
    sizes=st.lists(st.integers(1, 12), min_size=1, max_size=6),
    hold=st.integers(2, 30),
)
def test_join_results_do_not_depend_on_the_slicing(
    records: list[Record], plan: str, sizes: list[int], hold: int
) -> None:
    names = {spec.name for spec in PLANS[plan].inputs}
    mine = [r for r in records if r.source in names]
    whole = run(PLANS[plan], mine, [10_000])
    assert run(PLANS[plan], mine, sizes) == whole
    assert run(PLANS[plan], mine, [1]) == whole
    assert run(PLANS[plan], mine, sizes, merged=False) == whole
    assert run(PLANS[plan], mine, sizes, hold=hold) == whole
    assert run(PLANS[plan], mine, [1], hold=hold) == whole


def test_a_hold_runs_the_pipeline_after_its_records_or_its_seconds() -> None:
    """A held poll returns nothing and moves no watermark; the pipeline runs once `records`
    records came since its last run, or once `seconds` passed since it."""
    now = [0.0]
    hold = Hold(records=4, seconds=5.0)
    instance = Instance(PLANS["range"], range(PARTITIONS), clock=lambda: now[0], hold=hold)
    offsets: dict[tuple[str, int], int] = {}

    def feed(source: str, partition: int, ts: int, key: int) -> None:
        offset = offsets.get((source, partition), 0)
        offsets[source, partition] = offset + 1
        record = Record(source, partition, offset, ts, {"k": key, "m": 0})
        instance.feed(source, partition, to_batch(source, [record], ["k", "m"]))

    def ids() -> list[str]:
        return [i for batch in instance.poll() for i in batch.ids()]

    for source, ts in (("S", 10), ("T", 20)):
        feed(source, 0, ts, 1)
        feed(source, 1, ts, 7 if source == "S" else 8)
    assert ids() == [] and instance.released == 10  # 4 records: ran, released nothing yet
    for source, ts in (("S", 30), ("T", 40)):
        feed(source, 0, ts, 1)
        feed(source, 1, ts, 7 if source == "S" else 8)
    assert ids() == ["join|-1|-1|S@0:0*T@0:0"] and instance.released == 30
    feed("S", 0, 50, 1)
    feed("S", 1, 50, 7)
    feed("T", 0, 60, 1)
    assert ids() == [] and instance.released == 30  # 3 records, no time passed: held
    now[0] = 5.0
    assert ids() == ["join|-1|-1|S@0:1*T@0:0"] and instance.released == 40
