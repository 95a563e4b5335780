"""The state-moving protocols' roles, written once for both drivers: state-transfer,
savepoint-restart and moving-state (`StatePort`: the in-process `Group` and the worker).

All three stop the origin at a marker, carry the state of the moving partitions with the
positions it covers to the target, and resume there; the log is the upstream buffer (the step
list of seed 004 (UPM-CEP, State Transfer): deploy the new instance, buffer upstream, snapshot and
transfer, replay the buffer; here nothing is buffered in memory: the target reads from the
positions the state covers).

Origin (`MarkerOrigin`):
1. `pause`: the marker is where the origin has read when the request arrives, unless the
   request names one (seed 003 (Bartnik et al., On-the-fly Reconfiguration) 3.2 and 5.1 step 2:
   at the marker the upstream stops sending records to the migrating instance, whose sources
   never consume a record they cannot process, 6.4; seed 001 (Zhu et al., Dynamic Plan
   Migration) 4.1.4, Algorithm 2: the old plan accepts no new tuple and
   `cleanAccumulatedTuples` processes what is in it). It stops reading there; a repeated
   `pause` says whether every marker is reached.
2. Once reached, the state of the moving partitions and the positions it covers
   (`StatePort.state_covers`: records read but still waiting for the watermark are left to the
   log, not snapshotted) are saved (state-transfer, savepoint-restart: seed 003 5.1 step 3, the
   state to persistent storage) or exported (moving-state: seed 001 4.1.1, the states listed by
   state id), and the origin `release`s the partitions.

Targets:
- `SnapshotTarget` (state-transfer, savepoint-restart) `begin`s by restoring the saved state
  (by operator id: seed 003 3.3's new operator or replaced function takes over exactly at the
  marker with the old plan's state) and resumes from the positions it covers (seed 003 5.1
  step 4; the worker replays to its query's committed positions with output suppressed).
- `MovingStateTarget` (seed 001 4.1.4, Algorithm 2): `adopt` restores the exports into an instance
  of the origin's plan and gives every matched state of its own plan its old state (the whole
  state for the same computation, else shared or moved per state,
  `state_recompute.move_matched`); `recompute` fills the unmatched states by Algorithm 1,
  drops the old instance (safe, 4.1.3: the origin processed every tuple below the marker),
  installs the new one and resumes from the positions the state covers.

An export is the instance snapshot behind a short metadata header (kind, query, partitions,
state ids, the positions covered): no second encoding and no copy on the origin (parts that view
the state's arrays; the header padded so the arrays stay 8-byte aligned), and the target
restores its arrays as views of the buffer it received (`Instance.restore(..., adopt=True)`).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any, TypeVar

import orjson

from streamshift_engine.migration import capability, plan_change, state_recompute
from streamshift_engine.migration.port import InstancePort, Position, StatePort, positions_of
from streamshift_engine.migration.role import (
    Role,
    RoleAction,
    parse_positions,
    partitions_of,
    position_key,
    role_of,
)
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Instance
from streamshift_engine.state import codec

R = TypeVar("R", bound=Role)
EXPORT_KIND = "moving-state"
_LENGTH = struct.Struct("<I")  # an export: this length, the metadata (JSON), the instance snapshot


class MarkerOrigin(Role):
    """An origin that stops at a marker and hands its partitions' state over."""

    side = "origin"

    def __init__(
        self,
        migration: str,
        partitions: frozenset[int],
        port: StatePort,
        marker: Mapping[Position, int] | None = None,
    ) -> None:
        super().__init__(migration, partitions)
        read = port.positions_read()
        positions = positions_of(port.plan, partitions)
        for position in positions:
            if position not in read:
                raise ValueError(f"partition {position[1]} is not held by this worker")
        chosen = marker or {}
        self.marker = {p: chosen.get(p, read[p]) for p in positions}
        port.stop_at(self.marker)
        self.released: frozenset[int] = frozenset()
        self.paused = False

    def reached(self, port: InstancePort) -> bool:
        """Whether the origin has read up to the marker of every partition it still holds."""
        return not self.waiting(port)

    def waiting(self, port: InstancePort) -> list[Position]:
        """The positions of partitions not released yet that are short of their marker."""
        read = port.positions_read()
        return [
            p
            for p, offset in sorted(self.marker.items())
            if p[1] not in self.released and read.get(p, 0) < offset
        ]

    def pause(self, port: StatePort) -> dict[str, Any]:
        """Progress to the marker (`again` until it is reached)."""
        reached = self.reached(port)
        return {
            "paused": reached,
            "positions": {position_key(p): o for p, o in sorted(self.marker.items())},
            "again": not reached,
        }

    def chosen(self, port: StatePort, partitions: Collection[int] | None) -> frozenset[int]:
        """`partitions` (default all the role's), checked to be paused at the marker and not
        released yet."""
        chosen = self.partitions if partitions is None else frozenset(partitions)
        if not chosen <= self.partitions:
            raise ValueError(f"migration {self.migration} paused only {sorted(self.partitions)}")
        if chosen & self.released:
            raise ValueError(f"partitions {sorted(chosen & self.released)} are released already")
        if waiting := self.waiting(port):
            named = ", ".join(position_key(p) for p in waiting)
            raise ValueError(f"pause {named} at a marker first")
        return chosen

    def save(self, port: StatePort, partitions: Collection[int] | None = None) -> Any:
        """The state of the moving partitions saved where the target finds it."""
        chosen = self.chosen(port, partitions)
        return port.save_state(chosen, self.migration)

    def export(
        self, port: StatePort, partitions: Collection[int] | None = None
    ) -> tuple[bytes | memoryview, ...]:
        """The states of `partitions` (a target's share of the moving ones) by state id with
        the positions they cover (seed 001 4.1.1), then those partitions released; the parts
        view the snapshot's arrays."""
        chosen = self.chosen(port, partitions)
        begin = time.perf_counter()
        state = port.export_state(chosen)
        covers = port.state_covers(chosen)
        meta: dict[str, Any] = {
            "kind": EXPORT_KIND,
            "query": port.query,
            "partitions": sorted(chosen),
            "states": state_ids(port.plan),
            "covers": [[name, p, o] for (name, p), o in sorted(covers.items())],
        }
        self.release(port, chosen)
        meta["export_s"] = round(time.perf_counter() - begin, 3)  # snapshot and release
        return pack(meta, state)

    def release(self, port: StatePort, partitions: Collection[int] | None = None) -> dict[str, Any]:
        """Hand `partitions` (default all) over: commit, forget their state and positions."""
        chosen = (self.partitions if partitions is None else frozenset(partitions)) - self.released
        if chosen:
            port.hand_over(chosen)
            self.released |= chosen
        self.done = self.released == self.partitions
        return {"released": sorted(self.partitions if partitions is None else partitions)}

    def after_output(self, port: InstancePort) -> None:
        self.paused = self.reached(port)

    def phase(self) -> str:
        return "released" if self.done else "paused" if self.paused else "pausing"

    def report(self) -> dict[str, Any]:
        return {**super().report(), "marker": {position_key(p): o for p, o in self.marker.items()}}


class StateTransferOrigin(MarkerOrigin):
    protocol = "state-transfer"


class SavepointOrigin(MarkerOrigin):
    protocol = "savepoint-restart"


class MovingStateOrigin(MarkerOrigin):
    protocol = "moving-state"


class SnapshotTarget(Role):
    """A target that restores the origin's saved state and resumes where it ends."""

    side = "target"

    def begin(self, port: StatePort, saved: Any = None) -> dict[str, Any]:
        """Restore `saved` (None: the driver finds the partitions' latest state) and resume
        from the positions it covers (seed 003 5.1 step 4)."""
        covers, restored = port.restore_saved(self.partitions, self.migration, saved)
        port.resume_from(covers)
        self.done = True
        return {"partitions": sorted(self.partitions), **restored}


class StateTransferTarget(SnapshotTarget):
    protocol = "state-transfer"


class SavepointTarget(SnapshotTarget):
    protocol = "savepoint-restart"


class MovingStateTarget(Role):
    """Moving state's target between `adopt` and `recompute` (seed 001 4.1.4, Algorithm 2)."""

    protocol = "moving-state"
    side = "target"

    def adopt(
        self, port: StatePort, exports: Sequence[bytearray], old_plan: Plan
    ) -> dict[str, Any]:
        """Restore the origins' exports into an instance of `old_plan` and give each matched
        state of the port's plan its old state. The exports are handed over for good (the
        restored arrays view them). It builds instances and installs none, so a driver may run
        it off its own thread."""
        plan = port.plan
        same = capability.same_computation(old_plan, plan)
        reason = None if same else plan_change.refusal(old_plan, plan)
        if reason is not None:
            raise ValueError(f"moving-state cannot carry {old_plan.name}'s states: {reason}")
        self.old_plan = old_plan
        self.new = port.fresh_instance(self.partitions)
        self.old = self.new if same else Instance(old_plan, self.partitions)
        self.covers: dict[Position, int] = {}
        got: set[int] = set()
        begin, export_s = time.perf_counter(), 0.0
        for data in exports:
            meta, state = unpack(data)
            if meta.get("kind") != EXPORT_KIND or meta.get("query") != port.query:
                raise ValueError("not a moving-state export of this query")
            if meta["states"] != state_ids(old_plan):
                raise ValueError("the origin's states are not those of the origin plan given")
            self.old.restore(state, adopt=True)
            self.covers.update({(n, int(p)): int(o) for n, p, o in meta.get("covers", [])})
            got |= set(meta["partitions"])
            export_s += float(meta.get("export_s", 0.0))
        if got != set(self.partitions):
            raise ValueError(
                f"the origins exported partitions {sorted(got)}, not {sorted(self.partitions)}"
            )
        self.shared, self.moved_bytes = len(plan_change.slots(plan)), 0
        if not same:
            self.shared, self.moved_bytes = state_recompute.move_matched(
                old_plan, self.old, plan, self.new
            )
        matched = plan_change.matches(old_plan, plan)
        new_ids = {s.state_id for s in plan_change.slots(plan)}
        return {
            "role": "target",
            "partitions": sorted(self.partitions),
            "state_bytes": sum(len(data) for data in exports),
            "shared": self.shared,
            "moved_bytes": self.moved_bytes,
            "export_s": round(export_s, 3),
            "restore_s": round(time.perf_counter() - begin, 3),
            "matched": sorted(f"{op}/{store}" for op, store in matched),
            "unmatched": sorted(
                f"{s.operator}/{s.store}"
                for s in plan_change.slots(plan)
                if (s.operator, s.store) not in matched
            ),
            "discarded": sorted(
                f"{s.operator}/{s.store}"
                for s in plan_change.slots(old_plan)
                if s.state_id not in new_ids
            ),
        }

    def recompute(self, port: StatePort) -> dict[str, Any]:
        """Algorithm 1 for the unmatched states, the old instance dropped, then run from the
        positions the state covers."""
        if not hasattr(self, "new"):
            raise ValueError(f"migration {self.migration} has not begun on this worker")
        self.recomputed = 0
        if self.old is not self.new:
            self.recomputed = state_recompute.recompute_unmatched(
                self.old_plan, port.plan, self.new
            )
            self.new.carry_positions(self.old)
        port.install(self.new)
        covered = self.new.covered()
        positions = positions_of(port.plan, self.partitions)
        start = {p: covered.get(p, self.covers.get(p, 0)) for p in positions}
        read_again = port.resume_from(start)
        del self.old  # the unmatched states go with it (4.1.3)
        self.done = True
        return {
            "role": "target",
            "partitions": sorted(self.partitions),
            "recomputed_tuples": self.recomputed,
            "read_again": sum(read_again.values()),
            "positions": {position_key(p): o for p, o in sorted(start.items())},
        }


def state_ids(plan: Plan) -> list[dict[str, Any]]:
    """Every state of `plan` with its state id (as JSON)."""
    return [
        {"state": f"{s.operator}/{s.store}", "id": orjson.loads(orjson.dumps(s.state_id))}
        for s in plan_change.slots(plan)
    ]


def pack(
    meta: dict[str, Any], state: Sequence[bytes | memoryview]
) -> tuple[bytes | memoryview, ...]:
    """An export in parts: the header's length, the header (padded with spaces, which JSON
    allows, so the state's arrays stay aligned), the snapshot's parts."""
    header = orjson.dumps(meta)
    header += b" " * (-(_LENGTH.size + len(header)) % codec.ALIGN)
    return _LENGTH.pack(len(header)), header, *state


def unpack(data: bytes | bytearray) -> tuple[dict[str, Any], memoryview]:
    """An export's metadata and the instance snapshot it carries (a view: no copy)."""
    if len(data) < _LENGTH.size:
        raise ValueError("not a moving-state export: too short")
    (length,) = _LENGTH.unpack_from(data)
    end = _LENGTH.size + length
    meta: dict[str, Any] = orjson.loads(data[_LENGTH.size : end])
    return meta, memoryview(data)[end:]


def optional_partitions(body: dict[str, Any]) -> frozenset[int] | None:
    parts = body.get("partitions")
    return None if parts is None else frozenset(int(p) for p in parts)


ROLES: dict[str, tuple[type[MarkerOrigin], type[Role]]] = {
    "state-transfer": (StateTransferOrigin, StateTransferTarget),
    "savepoint-restart": (SavepointOrigin, SavepointTarget),
    "moving-state": (MovingStateOrigin, MovingStateTarget),
}
"""Each state-moving protocol's origin and target role: the one registry both drivers resolve
their roles from, when they make one (the in-process `state_moving` and the worker's actions)."""


def origin_role(protocol: str) -> type[MarkerOrigin]:
    return ROLES[protocol][0]


def target_role(protocol: str, kind: type[R]) -> type[R]:
    """`protocol`'s target role, checked to be a `kind`."""
    target = ROLES[protocol][1]
    if not issubclass(target, kind):
        raise TypeError(f"{protocol}'s target is a {target.__name__}, not a {kind.__name__}")
    return target


def _pause(protocol: str) -> RoleAction:
    """`pause`: the migration's origin role (made at the first call, its marker given or where
    the origin has read) and its progress to the marker."""

    def pause(
        roles: dict[str, Role], port: Any, migration: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        kind = origin_role(protocol)
        if migration not in roles:
            raw = body.get("marker")
            marker = None if raw is None else parse_positions(dict(raw))
            roles[migration] = kind(migration, partitions_of(body), port, marker)
        return role_of(roles, migration, kind).pause(port)

    return pause


def _save(protocol: str) -> RoleAction:
    def save(roles: dict[str, Role], port: Any, migration: str, body: dict[str, Any]) -> Any:
        origin = role_of(roles, migration, origin_role(protocol))
        return origin.save(port, optional_partitions(body))

    return save


def _release(protocol: str) -> RoleAction:
    def release(
        roles: dict[str, Role], port: Any, migration: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        origin = role_of(roles, migration, origin_role(protocol))
        return origin.release(port, optional_partitions(body))

    return release


def _begin(protocol: str) -> RoleAction:
    """`begin`: the target's whole part in one call (the control API answers a repeated call
    with the first answer), so the role is not kept among the instance's roles."""

    def begin(
        roles: dict[str, Role], port: Any, migration: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        kind = target_role(protocol, SnapshotTarget)
        return kind(migration, partitions_of(body)).begin(port)

    return begin


def _stop(roles: dict[str, Role], port: Any, migration: str, body: dict[str, Any]) -> Any:
    """The whole state saved and the instance ended (savepoint-restart's origin)."""
    return port.stop()


def _origin_actions(protocol: str) -> dict[str, RoleAction]:
    return {
        "pause": _pause(protocol),
        "snapshot": _save(protocol),
        "release": _release(protocol),
        "stop": _stop,
    }


ACTIONS: dict[str, dict[str, RoleAction]] = {
    "state-transfer": {**_origin_actions("state-transfer"), "begin": _begin("state-transfer")},
    "savepoint-restart": {
        **_origin_actions("savepoint-restart"),
        "begin": _begin("savepoint-restart"),
    },
    "moving-state": _origin_actions("moving-state"),
}
"""The synchronous control actions of each protocol's roles; moving-state's `export`, `begin`
(`MovingStateTarget.adopt`: the target pulls the exports) and `recompute` are served by the
worker's asynchronous handler, which calls the same role methods."""

ASYNC: dict[str, frozenset[str]] = {"moving-state": frozenset({"export", "begin", "recompute"})}
"""The actions a protocol's asynchronous handler serves (moving-state's target pulls the
exports over HTTP: `runtime.moving_state_api`)."""
