"""Parallel track (seed 001, section 4.2, Algorithm 3): old and new plan side by side.

Phases:

1. `starting`: the coordinator asks the origin to start; the origin's watermark when the request
   arrives is `T_M_start`: tuples before it are *old*, the rest *new* (4.1's definition, by
   position in the log).
2. `parallel`: the target runs the new plan (the same plan for a move, an equivalent one for a plan
   change) with empty state from the offsets at `T_M_start`, less the upstream horizon of its
   plan (the log is the buffer: windows below the controlling one are rebuilt from there). The
   origin keeps running the old plan and emits only results that contain an old tuple (4.2.2:
   the old root skips new-new joins); the target's results are held back (4.2.3) so per-key
   order holds. Both use the split of `handoff` at `A`, `T_M_start` aligned on the window grid.
3. The monitor (`Monitor_Old_Box`) ends the old plan once its watermark has passed `A` plus the
   plan's horizon (equation (4): `W`, or `2W` for stacked joins): it holds no old tuple any more.
   The origin is disconnected and the held results are released: `done`.
"""

from __future__ import annotations

from streamshift_engine.migration import handoff
from streamshift_engine.migration.cluster import Cluster
from streamshift_engine.migration.protocol import DONE, Protocol
from streamshift_engine.plan.model import Plan


class ParallelTrack(Protocol):
    name = "parallel-track"

    @classmethod
    def changes_plans(cls) -> bool:
        return True

    @classmethod
    def refusal(cls, plan: Plan, new_plan: Plan) -> str | None:
        reason = handoff.time_bounded_refusal(plan) or handoff.time_bounded_refusal(new_plan)
        if reason is None and handoff.grid_slide(plan) != handoff.grid_slide(new_plan):
            reason = "the new plan's controlling window has another grid, so no split is exact"
        return f"parallel-track refuses {plan.name}: {reason}" if reason else None

    def begin(self, cluster: Cluster) -> None:
        self.enter(cluster, "starting")
        self.send(cluster, "coordinator", "origin", "start")
        self.split: int | None = None

    def on_step(self, cluster: Cluster) -> None:
        for _ in cluster.transport.receive("origin"):
            self._start(cluster)
        if self.phase == "parallel" and self._old_plan_holds_no_old_tuples():
            cluster.remove(self.origin.name)
            if self.target is not None:
                cluster.emit(self.target.name, self.target.release_held())
            self.enter(cluster, DONE)

    def _start(self, cluster: Cluster) -> None:
        watermark = self.origin.watermark()
        start = watermark if watermark is not None else cluster.producer.next_ts
        self.split = handoff.align(self.plan, start)
        self.origin.output_filter = handoff.before(self.split)
        target = self.new_target()
        rebuild_from = self.split - handoff.upstream_horizon(self.new_plan)
        target.reader.assign(cluster.log.offsets_for_time(self.origin.partitions, rebuild_from))
        target.output_filter = handoff.from_(self.split)
        target.holding = True
        cluster.add(target)
        self.enter(cluster, "parallel")

    def _old_plan_holds_no_old_tuples(self) -> bool:
        watermark = self.origin.watermark()
        if watermark is None or self.split is None:
            return False
        return watermark > self.split + handoff.horizon(self.plan)
