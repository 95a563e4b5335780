"""A range join's state empties once the watermark is a window past it, also when its other
side stops receiving tuples: an upstream join that matches no more must not hold the old tuples
(and with them parallel track's old box, `migration.monitor`) for ever. Results are the same."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration import monitor
from streamshift_engine.plan.builtin import SEED_SCHEMA
from streamshift_engine.plan.compiler import extent
from streamshift_engine.plan.join_trees import JoinTree, join_tree_plan
from streamshift_engine.runner import Instance, collect

WINDOW = 1_000
TREES: list[JoinTree] = [
    (("S", "T"), "U"),
    (("S", "U"), "T"),
    ((("S", "T"), "U"), "V"),
    (("S", "T"), ("U", "V")),
]


def _batch(name: str, ts: list[int], keys: list[int], first: int) -> Batch:
    times = np.array(ts, np.int64)
    columns = {"ts": times, "l": np.array(keys, np.int64), "m": np.arange(len(ts), dtype=np.int64)}
    offsets = np.arange(first, first + len(ts), dtype=np.int64)
    return Batch(name, times, np.zeros(len(ts), np.int32), offsets, columns)


def _run(tree: JoinTree, joined: int, seed: int, end: bool) -> tuple[Instance, list[str]]:
    """Every stream: `joined` records of key 1 over 5 s (one at 2.5 s: they join), then two
    tails far ahead,
    each stream's of its own key (nothing joins them); polled after each part, or flushed."""
    plan = join_tree_plan("joins", tree, WINDOW, "l", SEED_SCHEMA)
    rng = np.random.default_rng(seed)
    instance = Instance(plan, [0])
    results = []
    names = [spec.name for spec in plan.inputs]
    for name in names:
        ts = sorted([2_500, *rng.integers(0, 5_000, joined - 1).tolist()])
        instance.feed(name, 0, _batch(name, ts, [1] * joined, 0))
    results += instance.poll()
    for tail, at in enumerate((100_000, 200_000)):
        for index, name in enumerate(names):
            instance.feed(name, 0, _batch(name, [at], [10 + index], joined + tail))
        results += instance.poll()
    if end:
        results += instance.flush()
    return instance, sorted(str(r) for r in collect(results))


@settings(max_examples=30, deadline=None)
@given(tree=st.sampled_from(TREES), joined=st.integers(1, 30), seed=st.integers(0, 1_000))
def test_the_old_tuples_go_once_the_watermark_is_past_them(
    tree: JoinTree, joined: int, seed: int
) -> None:
    instance, _ = _run(tree, joined, seed, end=False)
    assert instance.watermark() == 200_000
    assert monitor.old_box_finished(instance, 150_000)
    for operator in instance.pipeline.operators:
        for store in operator.stores.values():
            oldest = monitor.oldest(store)
            assert oldest is None or oldest >= 200_000 - 3 * WINDOW


@settings(max_examples=30, deadline=None)
@given(tree=st.sampled_from(TREES), joined=st.integers(1, 30), seed=st.integers(0, 1_000))
def test_purging_by_the_watermark_changes_no_result(tree: JoinTree, joined: int, seed: int) -> None:
    _, polled = _run(tree, joined, seed, end=True)
    plan = join_tree_plan("joins", tree, WINDOW, "l", SEED_SCHEMA)
    once = Instance(plan, [0])
    rng = np.random.default_rng(seed)
    for name in [spec.name for spec in plan.inputs]:
        ts = sorted([2_500, *rng.integers(0, 5_000, joined - 1).tolist()])
        once.feed(name, 0, _batch(name, ts, [1] * joined, 0))
    assert polled == sorted(str(r) for r in collect(once.flush()))
    assert polled  # key 1's records join


def test_extent_bounds_what_each_join_side_receives() -> None:
    plan = join_tree_plan("joins", ((("S", "T"), "U"), "V"), WINDOW, "l", SEED_SCHEMA)
    joins = [op for op in plan.operators if op.type == "window_join"]
    assert [[extent(plan, name) for name in op.inputs] for op in joins] == [
        [0, 0],
        [WINDOW, 0],
        [WINDOW, 0],
    ]
