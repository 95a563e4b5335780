"""UniMiCo's roles (seed 000 (Pham et al.), section 3.2, Algorithms 1 and 2), written once for
both drivers.

Target (`UniMiCoTarget`, Algorithm 1):
1. Created, it reads the moving partitions from the log end (the connect offsets) and feeds
   nothing: from the first batch it reads on each (input, partition) it takes the largest event
   time, and `ts_start` is one past the maximum of those over inputs and partitions (3.1.1,
   "Multiple-input window"). One past the largest rather than the first: records with that time
   may lie just before the connect offset (a producer's batch can end inside a run of equal
   timestamps), and the first record read may be a late one (3.1 assumes ordered input).
2. `activate` with its origin's answer: it re-reads from the connect offsets (Kafka is the
   buffer), drops input before `A - upstream_horizon` (3.1.1, "Multiple window operators"),
   keeps only results whose split time is at or after `A` (time-based controlling window) or
   opens its `TupleGate` at the boundary `C` with the `s - delta` discard (tuple-based, 3.2.2),
   and holds its results and dead letters.
3. `release_output` once the origin has handed over: the held results become visible after the
   origin's last one (per-key order for a `read_committed` reader), and of the held dead
   letters those at or after the origin's hand-over offsets (the origin sent the others).

Origin (`UniMiCoOrigin`, Algorithm 2): `handoff` with the targets' `ts_start` computes the
migration timestamp by equation (1) and the activation `A = ts_mi + s` (3.2.2), or for a `ROWS`
controlling window picks the boundary `C` and counts the tuples before it (equation (2),
`TupleGate`); it keeps the results before the split, and hands the partitions over once every
one of them is out (`handoff.finish_horizon`, or `n - 1` tuples counted from `C`)."""

from __future__ import annotations

from typing import Any

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.migration import capability, handoff, timestamps
from streamshift_engine.migration.port import InstancePort, Position, positions_of
from streamshift_engine.migration.role import (
    HoldingTarget,
    Role,
    RoleAction,
    is_moving,
    partitions_of,
    position_key,
    release_output_of,
    role_of,
)
from streamshift_engine.migration.split import keep_own_side
from streamshift_engine.migration.tuple_gate import TupleGate


class UniMiCoTarget(HoldingTarget):
    protocol = "unimico"

    def __init__(self, migration: str, partitions: frozenset[int], port: InstancePort) -> None:
        super().__init__(migration, partitions)
        if refusal := capability.refusal(self.protocol, port.plan):
            raise ValueError(refusal)
        positions = positions_of(port.plan, partitions)
        self.connect = port.end_offsets(positions)
        self.largest_first: dict[Position, int | None] = dict.fromkeys(positions)
        self.activation: int | None = None
        self.floor = 0
        port.read_from(self.connect)

    def ts_start(self) -> int | None:
        """One past the largest event time of the first batches read, once every (input,
        partition) has given one."""
        values = list(self.largest_first.values())
        if not values or any(v is None for v in values):
            return None
        return max(v for v in values if v is not None) + 1

    def on_input(self, port: InstancePort, batches: dict[Position, Batch]) -> dict[Position, Batch]:
        if self.activation is None:
            for position, batch in batches.items():
                if self.largest_first.get(position, 0) is None and len(batch):
                    self.largest_first[position] = int(batch.ts.max())
            if self.ts_start() is not None:
                port.stop_reading(list(self.largest_first))
            return {p: b for p, b in batches.items() if not is_moving(self.partitions, p)}
        return self.from_floor(batches, self.floor)

    def activate(self, port: InstancePort, answer: dict[str, Any]) -> dict[str, Any]:
        """Start at the origin's activation `A` (or boundary `C`), from the connect offsets."""
        if self.activation is None:
            plan = port.plan
            if handoff.tuple_controlled(plan):
                gate = TupleGate.install(port.pipeline, handoff.controlling_node(plan))
                self.activation = int(answer["boundary"])
                gate.open(self.activation, int(answer["discard"]), bool(answer["history_complete"]))
            else:
                self.activation = int(answer["activation"])
            self.floor = self.activation - handoff.upstream_horizon(plan)
            port.read_from(self.connect)
        return self.report()

    def on_output(self, port: InstancePort, results: list[ResultBatch]) -> list[ResultBatch]:
        """The results from the split on (the rest are the origin's, also while this target
        still reads what the origin read before it handed over); held until then."""
        activation = self.activation
        if activation is None:
            return results
        kept = keep_own_side(
            results, self.partitions, lambda b: handoff.split_time(b) < activation, "target"
        )
        if self.done:
            return kept
        self.held += kept
        return []

    def phase(self) -> str:
        if self.done:
            return "running"
        return "probing" if self.activation is None else "holding-output"

    def report(self) -> dict[str, Any]:
        return {
            **super().report(),
            "ts_start": self.ts_start(),
            "activation": self.activation,
        }


class UniMiCoOrigin(Role):
    protocol = "unimico"
    side = "origin"

    def __init__(self, migration: str, partitions: frozenset[int]) -> None:
        super().__init__(migration, partitions)
        self.activation: int | None = None
        self.gate: TupleGate | None = None
        self.answer: dict[str, Any] | None = None
        self.handed_over_at: dict[Position, int] = {}

    def handoff(self, port: InstancePort, ts_start: int) -> dict[str, Any]:
        """Fix the split from the targets' `ts_start`; the answer the targets activate with,
        or `{"ready": False}` while a `ROWS` window's count before `C` is not final (ask
        again)."""
        plan = port.plan
        if self.activation is None:
            start = ts_start + handoff.upstream_horizon(plan)
            if handoff.tuple_controlled(plan):
                self.gate = TupleGate.install(port.pipeline, handoff.controlling_node(plan))
                watermark = port.watermark()
                self.activation = start if watermark is None else max(start, watermark)
                self.gate.watch(self.activation)
            else:
                slide = handoff.grid_slide(plan)
                last = handoff.last_window_start(plan, port.watermark())
                ts_mi = timestamps.time_migration_timestamp(start, last, slide)
                self.activation = timestamps.activation_timestamp(ts_mi, slide)
                self.answer = {"ready": True, "activation": self.activation, "ts_mi": ts_mi}
        gate = self.gate
        if self.answer is None and gate is not None and gate.count_before_final:
            window = plan.controlling_window
            assert window is not None and self.activation is not None
            self.answer = {
                "ready": True,
                "boundary": self.activation,
                "discard": timestamps.counted_tuple_discard(gate.counted_before, window.slide),
                "history_complete": gate.counted_before == 0,
            }
        return self.answer or {"ready": False}

    def splitting_output(self) -> frozenset[int]:
        """From the split `A` on, results after it are the targets'."""
        return frozenset() if self.done or self.activation is None else self.partitions

    def take_back(self) -> None:
        """The hand-off is abandoned before the target started: this instance keeps every
        result of its partitions."""
        if self.gate is not None:
            self.gate.watch(None)
        self.activation = None
        self.answer = None

    def on_output(self, port: InstancePort, results: list[ResultBatch]) -> list[ResultBatch]:
        activation = self.activation
        if activation is None or self.gate is not None:  # a gate keeps windows before `C`
            return results
        return keep_own_side(
            results, self.partitions, lambda b: handoff.split_time(b) < activation, "origin"
        )

    def after_output(self, port: InstancePort) -> None:
        if self.done or self.answer is None or self.activation is None:
            return
        if self.gate is not None:
            complete = self.gate.counted_from >= self.gate.size - 1
        else:
            watermark = port.watermark()
            horizon = handoff.finish_horizon(port.plan)
            complete = watermark is not None and watermark > self.activation + horizon
        if complete:
            read = port.positions_read()
            self.handed_over_at = {
                p: read[p] for p in positions_of(port.plan, self.partitions) if p in read
            }
            port.hand_over(self.partitions)
            self.done = True

    def phase(self) -> str:
        return "released" if self.done else "handing-off"

    def report(self) -> dict[str, Any]:
        return {
            **super().report(),
            "activation": self.activation,
            "handed_over_at": {position_key(p): o for p, o in self.handed_over_at.items()},
        }


def start_of(ts_starts: list[int | None]) -> int | None:
    """The coordinator's `ts_start`: the maximum over the targets, once every one probed
    (a later start only makes the origins do more)."""
    if not ts_starts or any(t is None for t in ts_starts):
        return None
    return max(t for t in ts_starts if t is not None)


def _begin(
    roles: dict[str, Role], port: InstancePort, migration: str, body: dict[str, Any]
) -> dict[str, Any]:
    if migration not in roles:
        if port.owned():
            raise ValueError("a unimico target must hold no partitions yet")
        roles[migration] = UniMiCoTarget(migration, partitions_of(body), port)
    return roles[migration].report()


def _handoff(
    roles: dict[str, Role], port: InstancePort, migration: str, body: dict[str, Any]
) -> dict[str, Any]:
    if migration not in roles:
        roles[migration] = UniMiCoOrigin(migration, partitions_of(body))
    origin = role_of(roles, migration, UniMiCoOrigin)
    answer = origin.handoff(port, int(body["ts_start"]))
    return {**origin.report(), **answer, "again": not answer["ready"]}


def _activate(
    roles: dict[str, Role], port: InstancePort, migration: str, body: dict[str, Any]
) -> dict[str, Any]:
    return role_of(roles, migration, UniMiCoTarget).activate(port, body)


ACTIONS: dict[str, RoleAction] = {
    "begin": _begin,
    "handoff": _handoff,
    "activate": _activate,
    "release-output": release_output_of(UniMiCoTarget),
}
"""The control actions of UniMiCo's roles (the worker's control API runs them by name)."""
