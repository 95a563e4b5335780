"""The seed queries Q1, Q2, Q3 (seed 000 (Pham et al., UniMiCo), section 4) and SMQ (seed 003
(Bartnik et al., On-the-fly Reconfiguration), 6.3.1) on small paper-style inputs, with the expected
results worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
from streamshift_engine.events.batch import Batch
from streamshift_engine.plan import builtin
from streamshift_engine.runner import collect, run_plan


def seed_batch(source: str, rows: list[tuple[int, int, int]], partition: int = 0) -> Batch:
    ts = np.array([r[0] for r in rows], np.int64)
    return Batch(
        source,
        ts,
        np.full(len(rows), partition, np.int32),
        np.arange(len(rows), dtype=np.int64),
        {"ts": ts, "l": np.array([r[1] for r in rows]), "m": np.array([r[2] for r in rows])},
    )


# (ts ms, l, m)
S = seed_batch("S", [(1000, 1, 10), (4000, 2, 20), (9000, 1, 30), (12000, 2, 40), (25000, 1, 50)])
T = seed_batch("T", [(2000, 1, 5), (11500, 1, 6), (13000, 2, 7), (26000, 3, 8)])


def test_q1_joins_tuples_at_most_ten_seconds_apart_in_arrival_order() -> None:
    results, _ = run_plan(builtin("q1"), {"S": [S], "T": [T]})
    records = collect(results)
    # T@2000 meets S@1000 (1 s apart); S@9000 meets T@2000 (7 s); T@11500 meets S@9000 (2.5 s)
    # but not S@1000 (10.5 s, purged by lemma 2.2); T@13000 (l=2) meets S@4000 (9 s) and
    # S@12000 (1 s); S@25000 is 13.5 s after T@11500 and T@26000 has l=3: no match.
    assert [rid for batch in results for rid in batch.ids()] == [
        "q1|-1|-1|S@0:0*T@0:0",
        "q1|-1|-1|S@0:2*T@0:0",
        "q1|-1|-1|S@0:2*T@0:1",
        "q1|-1|-1|S@0:1*T@0:2",
        "q1|-1|-1|S@0:3*T@0:2",
    ]
    assert [(r["S.m"], r["T.m"]) for r in records] == [(10, 5), (30, 5), (30, 6), (20, 7), (40, 7)]
    bounds = [
        (lo, hi)
        for b in results
        for lo, hi in zip(b.min_ts.tolist(), b.max_ts.tolist(), strict=True)
    ]
    assert bounds == [(1000, 2000), (2000, 9000), (9000, 11500), (4000, 13000), (12000, 13000)]


def test_q2_sums_the_last_five_tuples_after_each_tuple() -> None:
    rows = [(1000 * i, 1, 10 * i) for i in range(1, 7)]
    results, _ = run_plan(builtin("q2"), {"S": [seed_batch("S", rows)]})
    # 10, 10+20, ..., then 20+30+40+50+60 once the sixth tuple pushes the first one out.
    assert [r["sum"] for r in collect(results)] == [10, 30, 60, 100, 150, 200]
    assert [r["window_start"] for r in collect(results)] == [1000, 1000, 1000, 1000, 1000, 2000]


def test_q2_merges_partitions_by_time_then_partition() -> None:
    first = seed_batch("S", [(1000, 1, 1), (3000, 1, 3)], partition=0)
    second = seed_batch("S", [(1000, 2, 100), (2000, 2, 20)], partition=1)
    results, _ = run_plan(builtin("q2"), {"S": [first, second]})
    # Order (ts, partition): 1 (p0 @1000), 100 (p1 @1000), 20 (p1 @2000), 3 (p0 @3000).
    assert [r["sum"] for r in collect(results)] == [1, 101, 121, 124]


def test_q3_sums_s_m_over_the_last_five_join_results() -> None:
    results, _ = run_plan(builtin("q3"), {"S": [S], "T": [T]})
    # The join results of Q1 carry S.m = 10, 30, 30, 20, 40 in that order.
    assert [r["sum"] for r in collect(results)] == [10, 40, 70, 90, 130]
    assert collect(results)[-1]["row"] == "S@0:3*T@0:2"


def test_smq_appends_the_running_count_of_each_key() -> None:
    ts = np.arange(6, dtype=np.int64) * 100
    numbers = Batch(
        "numbers",
        ts,
        np.zeros(6, np.int32),
        np.arange(6, dtype=np.int64),
        {"ts": ts, "key": np.array([7, 8, 7, 7, 8, 9]), "value": np.arange(6)},
    )
    results, _ = run_plan(builtin("smq"), {"numbers": [numbers]})
    assert [r["count"] for r in collect(results)] == [1, 1, 2, 3, 2, 1]
