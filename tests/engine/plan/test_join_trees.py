"""A 3- and 4-way join as a tree of binary range (or tumbling) joins: every join order gives the
brute-force result set (all tuples of one key within the window of each other, or in one
window), with the same ids and values."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.plan.join_trees import JoinTree, join_tree_plan, streams
from streamshift_engine.runner import collect, run_plan

SCHEMA = {"ts": "int", "k": "int", "m": "int"}
PARTITIONS = 2


def stream_batch(name: str, seed: int, count: int) -> Batch:
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, 300, count))
    keys = rng.integers(0, 3, count)
    partition = (keys % PARTITIONS).astype(np.int32)
    offset = np.zeros(count, np.int64)
    for p in range(PARTITIONS):
        offset[partition == p] = np.arange(int((partition == p).sum()))
    return Batch(name, ts, partition, offset, {"ts": ts, "k": keys, "m": rng.integers(0, 9, count)})


def result_ids(tree: JoinTree, data: dict[str, Batch], window: int) -> list[str]:
    plan = join_tree_plan("multi", tree, window, "k", SCHEMA)
    results, _ = run_plan(plan, {name: [data[name]] for name in streams(tree)})
    return sorted(record["id"] for record in collect(results))


def brute_force(data: dict[str, Batch], names: str, window: int) -> list[str]:
    sides = [
        [
            (f"{n}@{p}:{o}", t, k)
            for p, o, t, k in zip(
                data[n].partition.tolist(),
                data[n].offset.tolist(),
                data[n].ts.tolist(),
                data[n].columns["k"].tolist(),
                strict=True,
            )
        ]
        for n in names
    ]
    found = []
    for combination in itertools.product(*sides):
        times = [t for _, t, _ in combination]
        if len({k for *_, k in combination}) == 1 and max(times) - min(times) <= window:
            found.append("multi|-1|-1|" + "*".join(sorted(i for i, _, _ in combination)))
    return sorted(found)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10**6), window=st.sampled_from([10, 40, 120]))
def test_every_order_of_a_3_way_join_gives_the_brute_force_result_set(
    seed: int, window: int
) -> None:
    data = {name: stream_batch(name, seed + i, 20) for i, name in enumerate("STU")}
    expected = brute_force(data, "STU", window)
    for tree in ((("S", "T"), "U"), (("S", "U"), "T"), ("S", ("T", "U"))):
        assert result_ids(tree, data, window) == expected


def test_a_4_way_join_in_two_orders_gives_identical_records() -> None:
    data = {name: stream_batch(name, i, 15) for i, name in enumerate("ABCD")}
    orders: list[JoinTree] = [((("A", "B"), "C"), "D"), ("A", (("B", "C"), "D"))]
    outputs = []
    for tree in orders:
        plan = join_tree_plan("multi", tree, 60, "k", SCHEMA)
        results, _ = run_plan(plan, {name: [data[name]] for name in "ABCD"})
        outputs.append(sorted(collect(results), key=lambda r: str(r["id"])))
    assert outputs[0] == outputs[1]
    assert [r["id"] for r in outputs[0]] == brute_force(data, "ABCD", 60)
    assert set(outputs[0][0]) >= {"A.m", "B.m", "C.m", "D.m", "id", "window_start"}


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10**6), window=st.sampled_from([50, 100]))
def test_two_orders_of_a_3_way_tumbling_join_give_identical_ids_and_values(
    seed: int, window: int
) -> None:
    data = {name: stream_batch(name, seed + i, 20) for i, name in enumerate("STU")}
    outputs = []
    for tree in ((("S", "T"), "U"), ("S", ("U", "T"))):
        plan = join_tree_plan("multi", tree, window, "k", SCHEMA, kind="time")
        results, _ = run_plan(plan, {name: [data[name]] for name in "STU"})
        outputs.append(sorted(collect(results), key=lambda r: str(r["id"])))
    assert outputs[0] == outputs[1]
    expected = []
    for ids, start in in_one_window(data, "STU", window):
        expected.append(f"multi|{start}|{start + window}|" + "*".join(sorted(ids)))
    assert [r["id"] for r in outputs[0]] == sorted(expected)
    assert all(set(r) >= {"S.m", "T.m", "U.m", "id"} for r in outputs[0])


def in_one_window(data: dict[str, Batch], names: str, window: int) -> list[tuple[list[str], int]]:
    """Every combination of one tuple per stream with one key and one tumbling window."""
    sides = [
        [
            (f"{n}@{p}:{o}", t // window * window, k)
            for p, o, t, k in zip(
                data[n].partition.tolist(),
                data[n].offset.tolist(),
                data[n].ts.tolist(),
                data[n].columns["k"].tolist(),
                strict=True,
            )
        ]
        for n in names
    ]
    found = []
    for combination in itertools.product(*sides):
        if len({(w, k) for _, w, k in combination}) == 1:
            found.append(([i for i, _, _ in combination], combination[0][1]))
    return found
