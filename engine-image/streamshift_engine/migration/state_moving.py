"""The state-moving protocols in process: state transfer, moving state, savepoint and restart,
driving the roles of `state_moving_roles` (the same roles the worker runs) over a `Cluster`.

Phases:

1. `marking`: the coordinator sends a marker to the origin.
2. `draining`: on receipt the origin takes its role (`MarkerOrigin`: the marker where it has
   read) and processes up to it.
3. `transferring`: once the marker is reached the origin saves (or, moving-state, exports) the
   state of its partitions with the positions it covers and releases them; what it saved
   travels as a message (its size is the state moved: shared, not copied, for moving state
   without a plan change).
4. `restoring`: the target group is created (after `restart_steps` ticks for savepoint-restart:
   a new pod starting) and its role restores the state and resumes from the positions it
   covers (moving-state: `matching-moving-recomputing`, Algorithms 1 and 2): `done`.

`StateTransfer` is seed 003 (Bartnik et al., On-the-fly Reconfiguration), 3.2 and 5.1, with
seed 004 (UPM-CEP, State Transfer); it also carries seed 003's runtime modifications (3.3.1 a new
operator, 3.3.2 a replaced function): the new plan takes over exactly at the marker, with the old
plan's state by operator id. `MovingState` is seed 001 (Zhu et al., Dynamic Plan Migration) 4.1;
`SavepointRestart` is seed 003's baseline (stop with a savepoint, restore on a new instance).
"""

from __future__ import annotations

from typing import Any, ClassVar

from streamshift_engine.migration import capability
from streamshift_engine.migration.cluster import Cluster
from streamshift_engine.migration.group import Group
from streamshift_engine.migration.protocol import DONE, Protocol
from streamshift_engine.migration.role import Role
from streamshift_engine.migration.state_moving_roles import (
    MarkerOrigin,
    MovingStateTarget,
    SnapshotTarget,
    origin_role,
    target_role,
)
from streamshift_engine.migration.state_recompute import StateMove


class _StateMove(Protocol):
    restart_steps: ClassVar[int] = 0

    def begin(self, cluster: Cluster) -> None:
        self.enter(cluster, "marking")
        self.send(cluster, "coordinator", "origin", "marker")
        self.origin_role: MarkerOrigin | None = None
        self.restore_at: int | None = None
        self.travelled: Any = None

    def on_step(self, cluster: Cluster) -> None:
        for _ in cluster.transport.receive("origin"):
            kind = origin_role(self.name)
            self.origin_role = kind(self.name, self.origin.partitions, self.origin)
            self.origin.roles.append(self.origin_role)
            self.enter(cluster, "draining")
        origin = self.origin_role
        if self.phase == "draining" and origin is not None and origin.pause(self.origin)["paused"]:
            self.enter(cluster, "transferring")
            travels = self._send_off(origin)
            cluster.remove(self.origin.name)
            self.send(cluster, "origin", "target", "state", **travels)
        for message in cluster.transport.receive("target"):
            self.restore_at = cluster.step_number + self.restart_steps
            self.travelled = message.body
        if self.restore_at is not None and cluster.step_number >= self.restore_at:
            self.enter(cluster, "restoring")
            target = self.new_target()
            self._install(cluster, target)
            cluster.add(target)
            self.restore_at = None
            self.enter(cluster, DONE)

    def may_end_with_input(self) -> bool:
        return self.phase in ("marking", "done")

    def _send_off(self, origin: MarkerOrigin) -> dict[str, Any]:
        """The origin's saved state (a snapshot with the positions it covers), released."""
        saved: dict[str, Any] = origin.save(self.origin)
        origin.release(self.origin)
        self.state_bytes_moved = len(saved["state"])
        return saved

    def _install(self, cluster: Cluster, target: Group) -> None:
        """The target's role restores the travelled state and resumes where it ends."""
        role = target_role(self.name, SnapshotTarget)(self.name, target.partitions)
        self.target_role: Role = role
        role.begin(target, self.travelled)


class StateTransfer(_StateMove):
    name = "state-transfer"


class SavepointRestart(_StateMove):
    name = "savepoint-restart"
    restart_steps = 3


class MovingState(_StateMove):
    """Seed 001 4.1: the origin exports its states by state id; the target shares or moves the
    matched ones and recomputes the rest (Algorithms 1 and 2). Without a plan change the
    export is restored as a whole: shared, nothing moved."""

    name = "moving-state"

    def _send_off(self, origin: MarkerOrigin) -> dict[str, Any]:
        return {"export": bytearray().join(origin.export(self.origin))}

    def _install(self, cluster: Cluster, target: Group) -> None:
        self.enter(cluster, "matching-moving-recomputing")
        role = target_role(self.name, MovingStateTarget)(self.name, target.partitions)
        self.target_role = role
        role.adopt(target, [self.travelled["export"]], self.plan)
        role.recompute(target)
        self.moved = StateMove(role.shared, role.moved_bytes, role.recomputed)
        same = capability.same_computation(self.plan, self.new_plan)
        self.state_bytes_moved = 0 if same else role.moved_bytes
