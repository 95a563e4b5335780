"""A join batch taken against only the held rows of its arriving keys (`joins._relevant`, used on
large states) gives what the whole state gives: the same results in the same order, and the same
state after every poll, for range and rows joins and seed Q3's join feeding a ROWS sum, under
any slicing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.operators import joins
from streamshift_engine.operators.joins import SymmetricJoin
from streamshift_engine.runner import Instance

from engine.harness import Record, partitioned_records, streams, to_batch
from engine.operators.test_join_slicing import PARTITIONS, PLANS, SCHEMA

JOINS = ("range", "rows", "seed-q3")


def run(plan: str, records: list[Record], sizes: list[int]) -> tuple[list[Any], list[Any]]:
    """Results in output order and, after each poll, every join side's state (its rows)."""
    instance = Instance(PLANS[plan], range(PARTITIONS), clock=lambda: 0.0)
    fields = [f for f in SCHEMA if f != "ts"]
    pending = {place: list(rs) for place, rs in sorted(streams(records).items())}
    results: list[Any] = []
    states: list[Any] = []
    step = 0
    while any(pending.values()):
        for (source, partition), queue in pending.items():
            size = sizes[step % len(sizes)]
            step += 1
            chunk, pending[(source, partition)] = queue[:size], queue[size:]
            if chunk:
                instance.feed(source, partition, to_batch(source, chunk, fields))
        results += [(b.ids(), b.min_ts.tolist(), list(b.rows())) for b in instance.poll()]
        states.append(_states(instance))
    results += [(b.ids(), b.min_ts.tolist(), list(b.rows())) for b in instance.flush()]
    states.append(_states(instance))
    return results, states


def _states(instance: Instance) -> list[Any]:
    found = []
    for operator in instance.pipeline.operators:
        if isinstance(operator, SymmetricJoin):
            for side in (0, 1):
                table = operator.side(side).table()
                rows = {} if table is None else {n: c.tolist() for n, c in table.items()}
                found.append(rows)
    return found


records = partitioned_records(
    ["S", "T"],
    PARTITIONS,
    {"k": st.integers(0, 5), "m": st.integers(0, 9)},
    max_records=30,
    max_gap=400,
)


@settings(max_examples=60, deadline=None)
@given(
    records=records,
    plan=st.sampled_from(JOINS),
    sizes=st.lists(st.integers(1, 12), min_size=1, max_size=6),
)
def test_joining_against_the_relevant_rows_changes_nothing(
    records: list[Record], plan: str, sizes: list[int]
) -> None:
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(joins, "RELEVANT_FROM", 10**9)
        whole = run(plan, records, sizes)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(joins, "RELEVANT_FROM", 0)
        patched.setattr(joins, "RELEVANT_SHARE", 1.0)
        assert run(plan, records, sizes) == whole


def test_a_batch_picks_only_the_held_rows_of_its_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a large held state, `_relevant` picks the held rows whose key arrives (either side),
    and none when most of them would be picked."""
    monkeypatch.setattr(joins, "RELEVANT_FROM", 4)
    instance = Instance(PLANS["range"], range(PARTITIONS), clock=lambda: 0.0)
    join = next(op for op in instance.pipeline.operators if isinstance(op, SymmetricJoin))
    held = {"ts": np.arange(8), "v:k": np.array([0, 1, 2, 3, 0, 1, 2, 3])}
    arriving = {"ts": np.array([9, 9]), "v:k": np.array([2, 5])}
    left = {n: np.concatenate([held[n], arriving[n]]) for n in held}
    right = {n: np.concatenate([held[n], arriving[n][:0]]) for n in held}
    chosen = join._relevant([left, right], [8, 8])
    assert [c.tolist() if c is not None else None for c in chosen] == [[2, 6], [2, 6]]
    monkeypatch.setattr(joins, "RELEVANT_SHARE", 0.2)
    assert join._relevant([left, right], [8, 8]) == [None, None]
