"""The cost model of seed 001 (Zhu et al., Dynamic Plan Migration), section 5, beside measured
migrations of a 3-way join reorder.

The plan `(S join T) join U` becomes `(S join U) join T` (one key, so every pair within the
window joins: sigma = 1) over a range of global windows `W`. Measured: moving-state's matching,
moving and recomputing step (wall clock; the draining before it is the same for every `W`) and
parallel-track's migration stage (event time from the start until the monitor ends the old plan).
Predicted: equation (3) with the unit costs of Table 1 timed on this machine (`unit_costs`) and
the arrival rates of the input, and equation (4) (`W` or `2W`). Beside them, the recomputed
state's size: equation (1)'s `lambda_S lambda_U W^2` against the pairs actually recomputed (the
states at the marker hold more than `lambda W` tuples where the input bunches, and lemma 2.2
purges lazily), which is most of the gap between the measured and predicted recomputation.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

import matplotlib.pyplot as plt
import numpy as np
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration import cost_model
from streamshift_engine.migration.cluster import Cluster
from streamshift_engine.migration.parallel_track import ParallelTrack
from streamshift_engine.migration.run import compare, run_migration, run_reference
from streamshift_engine.migration.state_moving import MovingState
from streamshift_engine.operators.joins import RangeJoin, combined_identity
from streamshift_engine.plan.join_trees import join_tree_plan
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Instance

WINDOWS = [100, 200, 400, 800, 1_600]
SPAN_MS = 8_000
RECORDS = 160
SLICE_MS = 50
REPEATS = 3  # the machine is shared: the fastest of three recomputations is timed
SCHEMA = {"ts": "int", "k": "int", "m": "int"}
OLD = cost_model.JoinNode(
    cost_model.JoinNode(
        cost_model.Stream("S", RECORDS / SPAN_MS), cost_model.Stream("T", RECORDS / SPAN_MS), 1.0
    ),
    cost_model.Stream("U", RECORDS / SPAN_MS),
    1.0,
)
NEW = cost_model.JoinNode(
    cost_model.JoinNode(
        cost_model.Stream("S", RECORDS / SPAN_MS), cost_model.Stream("U", RECORDS / SPAN_MS), 1.0
    ),
    cost_model.Stream("T", RECORDS / SPAN_MS),
    1.0,
)


class TimedMovingState(MovingState):
    """Moving state that keeps its runs, so the recomputing step can be timed from phases."""

    runs: ClassVar[list[MovingState]] = []

    def begin(self, cluster: Cluster) -> None:
        TimedMovingState.runs.append(self)
        super().begin(cluster)


class TimedParallelTrack(ParallelTrack):
    """Parallel track that keeps its runs, to tell a finished stage from one the input cut."""

    runs: ClassVar[list[ParallelTrack]] = []

    def begin(self, cluster: Cluster) -> None:
        TimedParallelTrack.runs.append(self)
        super().begin(cluster)


def inputs() -> dict[str, Batch]:
    rng = np.random.default_rng(11)
    data = {}
    for name in "STU":
        ts = np.sort(rng.integers(0, SPAN_MS, RECORDS))
        columns = {"ts": ts, "k": np.zeros(RECORDS, np.int64), "m": rng.integers(0, 9, RECORDS)}
        data[name] = Batch(
            name, ts, np.zeros(RECORDS, np.int32), np.zeros(RECORDS, np.int64), columns
        )
    return data


def unit_costs(samples: int = 300) -> cost_model.UnitCosts:
    """Table 1's times measured here: compare ids, create a cursor, join a pair, insert."""
    join = RangeJoin("j", ("L", "R"), [("k", "k")], 10**9, [["m"], ["m"]], [(), ()], True)
    records = [(i, i, i, f"S@0:{i}", i) for i in range(samples)]
    start = time.perf_counter()
    for left in records:
        for right in records:
            join.joinable(left, right)
    join_pair = (time.perf_counter() - start) / samples**2
    start = time.perf_counter()
    state: list[tuple[object, ...]] = []
    for left, right in zip(records, reversed(records), strict=True):
        state.append((left[0], left[1], right[2], combined_identity(left, right), *left[4:]))
    insert = (time.perf_counter() - start) / samples
    ids = [("streams", (f"S{i}",), None) for i in range(samples)]
    start = time.perf_counter()
    matched = sum(a == b for a in ids for b in ids[:10])
    compare_time = (time.perf_counter() - start) / (samples * 10) if matched else 0.0
    cursors: dict[int, object] = {}
    start = time.perf_counter()
    for i in range(samples):
        cursors[i] = state
    cursor = (time.perf_counter() - start) / samples
    return cost_model.UnitCosts(compare_time, cursor, join_pair, insert)


def measure(window: int, data: dict[str, Batch]) -> tuple[float, int, int | None, bool]:
    """Moving-state's recomputing step (s) and the tuples it recomputed, parallel-track's stage
    (event ms, None when the input ended first) and whether both gave the output of the run
    without migration."""
    old = join_tree_plan("joins", (("S", "T"), "U"), window, "k", SCHEMA)
    new = join_tree_plan("joins", (("S", "U"), "T"), window, "k", SCHEMA)

    def factory(plan: Plan) -> Instance:
        return Instance(plan, [0])

    reference = run_reference(old, data, 1, factory, SLICE_MS)
    start = SPAN_MS // SLICE_MS // 4
    TimedMovingState.runs.clear()
    for _ in range(REPEATS):
        moved = run_migration(TimedMovingState, old, new, data, 1, factory, SLICE_MS, start)
    recompute_s = min(
        phases["done"] - phases["matching-moving-recomputing"]
        for phases in ({e.phase: e.wall for e in run.phases} for run in TimedMovingState.runs)
    )
    TimedParallelTrack.runs.clear()
    tracked = run_migration(TimedParallelTrack, old, new, data, 1, factory, SLICE_MS, start)
    assert tracked.cost is not None
    stage = tracked.cost.event_time_ms if TimedParallelTrack.runs[0].done else None
    exact = not compare(reference.emitted, moved.emitted) and not compare(
        reference.emitted, tracked.emitted
    )
    recomputed = TimedMovingState.runs[0].moved.recomputed_tuples
    return recompute_s, recomputed, stage, exact


def report(out: str) -> None:
    costs = unit_costs()
    data = inputs()
    print(
        "seed 001 cost model vs measured, (S join T) join U -> (S join U) join T, "
        f"{RECORDS} tuples per stream over {SPAN_MS} ms"
    )
    print(f"unit costs (s): join pair {costs.join_pair:.2e}, insert {costs.insert:.2e}")
    print(
        f"{'W ms':>6} {'MS pred s':>10} {'MS meas s':>10} {'pairs pred':>10} {'pairs meas':>10} "
        f"{'PT pred ms':>11} {'PT meas ms':>11} exact"
    )
    rows = []
    rate = RECORDS / SPAN_MS
    for window in WINDOWS:
        predicted_ms = cost_model.moving_state_time(OLD, NEW, window, costs)
        predicted_pt = cost_model.parallel_track_time(OLD, window)
        measured_ms, recomputed, measured_pt, exact = measure(window, data)
        rows.append((window, predicted_ms, measured_ms, predicted_pt, measured_pt))
        print(
            f"{window:>6} {predicted_ms:>10.5f} {measured_ms:>10.5f} "
            f"{rate * rate * window**2:>10.0f} {recomputed:>10} {predicted_pt:>11.0f} "
            f"{'unfinished' if measured_pt is None else measured_pt:>11} {'yes' if exact else 'NO'}"
        )
    plot(rows, out)
    print(f"plot: {out}")


def plot(rows: list[tuple[int, float, float, float, int | None]], out: str) -> None:
    plt.switch_backend("Agg")
    windows = [r[0] for r in rows]
    figure, (moving, parallel) = plt.subplots(1, 2, figsize=(10, 4))
    moving.plot(windows, [r[1] for r in rows], "o--", label="predicted (eq. 3)")
    moving.plot(windows, [r[2] for r in rows], "s-", label="measured")
    moving.set(title="moving-state: match, move, recompute", xlabel="W (ms)", ylabel="seconds")
    parallel.plot(windows, [r[3] for r in rows], "o--", label="predicted (eq. 4: 2W)")
    finished = [(r[0], r[4]) for r in rows if r[4] is not None]
    parallel.plot([w for w, _ in finished], [m for _, m in finished], "s-", label="measured")
    parallel.set(title="parallel-track: migration stage", xlabel="W (ms)", ylabel="event time (ms)")
    for axes in (moving, parallel):
        axes.legend()
    figure.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=100)
    plt.close(figure)
