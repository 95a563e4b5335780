"""Parallel track (seed 001, section 4.2, Algorithm 3): old and new plan side by side.

Phases:

1. `starting`: the coordinator asks the origin to start. `T_M_start` is when the request arrives:
   the tuples the origin's instance has released into its plan by then (event time before its
   watermark `A`) are *old*, every other tuple *new* (`monitor`).
2. `parallel`: the target runs the new plan (the same plan for a move, an equivalent one for a
   plan change) with empty state, reading the log from `A` less the plan's read-back (`marking`:
   windows straddling `A` must be seen whole to be recognised as old), and emits only new results
   (no old tuple in them). The origin keeps running the old plan and emits only old results
   (4.2.2: the old root skips new-new combinations); the target's results are held back (4.2.3)
   so per-key order holds.
3. `Monitor_Old_Box` (4.2.4) checks, once per tick, the old plan's states for old tuples; when
   every operator's `IF_FINISHED` flag is set the origin is disconnected and the held results are
   released: `done`. How long that takes is the migration stage of equation (4): `W` for one
   level of joins, `2W` when a join's output feeds another join, `n` new tuples for a `ROWS n`
   window.
"""

from __future__ import annotations

from streamshift_engine.migration import marking, monitor
from streamshift_engine.migration.cluster import Cluster
from streamshift_engine.migration.protocol import DONE, Protocol
from streamshift_engine.migration.tuple_gate import TupleGate


class ParallelTrack(Protocol):
    name = "parallel-track"

    def begin(self, cluster: Cluster) -> None:
        self.enter(cluster, "starting")
        self.send(cluster, "coordinator", "origin", "start")
        self.split: int | None = None

    def on_step(self, cluster: Cluster) -> None:
        for _ in cluster.transport.receive("origin"):
            self._start(cluster)
        if self.phase == "parallel" and self._old_box_finished():
            cluster.remove(self.origin.name)
            if self.target is not None:
                cluster.emit(self.target.name, self.target.release_held())
            self.enter(cluster, DONE)

    def _start(self, cluster: Cluster) -> None:
        split = self.origin.instance.watermark()
        if split is None:
            split = self._before_every_tuple(cluster)
        self.split = split
        self.origin.output_filter = marking.old_results(split)
        target = self.new_target()
        rebuild_from = split - marking.readback(self.new_plan)
        target.reader.assign(cluster.log.offsets_for_time(self.origin.partitions, rebuild_from))
        target.output_filter = marking.new_results(split)
        target.holding = True
        window = marking.rows_window(self.new_plan)
        if window is not None:
            gate = TupleGate.install(target.instance.pipeline, window)
            gate.open(split, 0, history_complete=not self._old_rows_counted())
        cluster.add(target)
        self.enter(cluster, "parallel")

    def _before_every_tuple(self, cluster: Cluster) -> int:
        """A split no tuple precedes (the origin has released none: none is old)."""
        log = cluster.log
        firsts = [
            log[topic].timestamp_at(partition, 0)
            for topic, partition in log.topic_partitions(self.origin.partitions)
            if log[topic].end_offset(partition)
        ]
        return min([*firsts, cluster.producer.next_ts])

    def _old_rows_counted(self) -> bool:
        """Whether the old plan's `ROWS` window has counted a tuple (an old one)."""
        window = marking.rows_window(self.plan)
        operators = self.origin.instance.pipeline.operators
        return any(op.id == window and op.partitions() for op in operators)

    def _old_box_finished(self) -> bool:
        return self.split is not None and monitor.old_box_finished(self.origin.instance, self.split)
