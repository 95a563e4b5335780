"""The protocols that move state: state transfer, moving state, savepoint and restart.

All three stop the origin at a point in the log, carry the state of the group and the offsets it
covers to a new instance, and resume there; the log is the upstream buffer (seed 004's step list:
deploy the new instance, buffer upstream, snapshot and transfer, replay the buffer; here nothing
is buffered in memory: the target simply reads from the snapshot's offsets). Phases:

1. `marking`: the coordinator sends a marker; on receipt the origin fixes marker offsets for every
   partition of the group and stops reading there (`savepoint-restart` stops where it is).
2. `draining`: the origin processes up to the marker; records read but still below the watermark
   stay in the log and are not part of the state (`Group.covered_positions`, from the engine's
   `Instance.covered()`).
3. `transferring`: the origin snapshots its state with those offsets and leaves; the snapshot
   travels as a message (its size is the state moved: shared, not copied, for moving state).
4. `restoring`: the target is created (after `restart_steps` ticks for savepoint-restart: a new
   pod starting), restores the snapshot and resumes from the offsets: `done`.

`StateTransfer` is seeds 003 (3.2, 5.1) and 004; it also carries seed 003's runtime modifications
(3.3.1 a new operator, 3.3.2 a replaced function): the new plan takes over exactly at the marker,
with the old plan's state. `MovingState` is seed 001 4.1 (Algorithm 2) for a plan whose states all
match by state id (the snapshot is shared); `SavepointRestart` is the baseline.
"""

from __future__ import annotations

from typing import ClassVar

from streamshift_engine.migration import capability, state_recompute
from streamshift_engine.migration.cluster import Cluster
from streamshift_engine.migration.group import Group
from streamshift_engine.migration.protocol import DONE, Protocol
from streamshift_engine.runner import Instance


class _SnapshotMove(Protocol):
    restart_steps: ClassVar[int] = 0
    shares_state: ClassVar[bool] = False
    aligns_marker: ClassVar[bool] = True

    def begin(self, cluster: Cluster) -> None:
        self.enter(cluster, "marking")
        self.send(cluster, "coordinator", "origin", "marker")
        self.restore_at: int | None = None

    def on_step(self, cluster: Cluster) -> None:
        for message in cluster.transport.receive("origin"):
            if message.kind == "marker":
                self._place_marker(cluster)
        if self.phase == "draining" and self._origin_at_marker():
            self._transfer(cluster)
        for message in cluster.transport.receive("target"):
            self.restore_at = cluster.step_number + self.restart_steps
            self.snapshot = message.body
        if self.restore_at is not None and cluster.step_number >= self.restore_at:
            self._restore(cluster)

    def may_end_with_input(self) -> bool:
        return self.phase in ("marking", "done")

    def _place_marker(self, cluster: Cluster) -> None:
        reader = self.origin.reader
        if self.aligns_marker:
            marker = cluster.producer.next_ts
            reader.stop_at(cluster.log.offsets_for_time(self.origin.partitions, marker))
        else:
            reader.stop_at(dict(reader.positions))
        self.enter(cluster, "draining")

    def _origin_at_marker(self) -> bool:
        return all(self.origin.reader.at_limit(tp) for tp in self.origin.reader.positions)

    def _transfer(self, cluster: Cluster) -> None:
        self.enter(cluster, "transferring")
        cluster.remove(self.origin.name)
        positions = self.origin.covered_positions()
        self.send(cluster, "origin", "target", "snapshot", positions=positions, **self._state())

    def _state(self) -> dict[str, object]:
        """The origin's state as it travels to the target (a snapshot)."""
        state = self.origin.instance.snapshot()
        self.state_bytes_moved = 0 if self.shares_state else len(state)
        return {"state": state}

    def _install(self, cluster: Cluster, target: Group) -> None:
        """Put the travelled state into the target's instance."""
        target.instance.restore(self.snapshot["state"])

    def _restore(self, cluster: Cluster) -> None:
        self.enter(cluster, "restoring")
        target = self.new_target()
        self._install(cluster, target)
        target.reader.assign(self.snapshot["positions"])
        cluster.add(target)
        self.restore_at = None
        self.enter(cluster, DONE)


class StateTransfer(_SnapshotMove):
    name = "state-transfer"


class MovingState(_SnapshotMove):
    """Seed 001 4.1. For the same plan the snapshot is shared as a whole; for a plan change the
    origin's live instance is handed over and `state_recompute.move_states` shares its matched
    states, moves re-laid ones and recomputes the unmatched ones (Algorithms 1 and 2)."""

    name = "moving-state"
    shares_state = True

    def _state(self) -> dict[str, object]:
        if capability.same_computation(self.plan, self.new_plan):
            return super()._state()
        return {"instance": self.origin.instance}

    def _install(self, cluster: Cluster, target: Group) -> None:
        if capability.same_computation(self.plan, self.new_plan):
            super()._install(cluster, target)
            return
        self.enter(cluster, "matching-moving-recomputing")
        old, new = self.snapshot["instance"], target.instance
        if not isinstance(old, Instance) or not isinstance(new, Instance):
            raise TypeError("a plan change moves the states of engine Instances")
        self.moved = state_recompute.move_states(self.plan, old, self.new_plan, new)
        self.state_bytes_moved = self.moved.moved_bytes


class SavepointRestart(_SnapshotMove):
    name = "savepoint-restart"
    restart_steps = 3
    aligns_marker = False
