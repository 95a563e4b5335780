"""Parallel track (seed 001 (Zhu et al., Dynamic Plan Migration), section 4.2, Algorithm 3) in
process: the coordinator's messages between the roles of `parallel_track_roles`, the same roles the
worker runs.

Phases:

1. `starting`: the coordinator asks the origin to split. `T_M_start` is when the request
   arrives: the tuples the origin has released into its plan by then (event time before its
   watermark `A`) are *old*, every other tuple *new* (`monitor`); an origin without a watermark
   yet is asked again next tick. Its answer (`A`, the read-back offsets, whether its `ROWS`
   window counted a tuple) travels to the target.
2. `parallel`: the target runs the new plan with empty state from the read-back offsets and
   holds its new results; the origin emits only old ones. Once `Monitor_Old_Box` finds no old
   tuple in the old plan the origin hands over and the target's held output is released:
   `done`.

End of input may end the run before the origin splits or once the target runs (every live
group flushes its side).
"""

from __future__ import annotations

from streamshift_engine.migration.cluster import Cluster
from streamshift_engine.migration.parallel_track_roles import NoWatermark, TrackOrigin, TrackTarget
from streamshift_engine.migration.protocol import DONE, Protocol


class ParallelTrack(Protocol):
    name = "parallel-track"

    def begin(self, cluster: Cluster) -> None:
        self.enter(cluster, "starting")
        self.send(cluster, "coordinator", "origin", "split")
        self.origin_role: TrackOrigin | None = None
        self.target_role: TrackTarget | None = None
        self.asked = False

    def on_step(self, cluster: Cluster) -> None:
        for _ in cluster.transport.receive("origin"):
            self.asked = True
        if self.asked and self.origin_role is None:
            self._split(cluster)
        for message in cluster.transport.receive("target"):
            target = self.new_target()
            self.target_role = TrackTarget(self.name, target.partitions, target, message.body)
            target.roles.append(self.target_role)
            cluster.add(target)
            self.enter(cluster, "parallel")
        origin, role = self.origin_role, self.target_role
        if origin is not None and origin.done and role is not None and self.phase != DONE:
            cluster.remove(self.origin.name)
            assert self.target is not None
            role.release_output(self.target, origin.handed_over_at)
            cluster.emit(self.target.name, self.target.take_outbox())
            self.enter(cluster, DONE)

    def may_end_with_input(self) -> bool:
        """Not while the origin already drops new results the not-yet-started target owes."""
        return self.origin_role is None or self.target_role is not None

    def _split(self, cluster: Cluster) -> None:
        try:
            self.origin_role = TrackOrigin(self.name, self.origin.partitions, self.origin)
        except NoWatermark:
            return
        self.origin.roles.append(self.origin_role)
        self.send(cluster, "origin", "target", "begin", **self.origin_role.report())
