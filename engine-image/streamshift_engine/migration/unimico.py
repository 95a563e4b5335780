"""UniMiCo (seed 000): hand a partition group over at a window boundary, moving no state.

Phases, following Algorithms 1 (target) and 2 (origin) of section 3.2:

1. `connecting`: the coordinator sends `migrate`; the target is assigned the group's partitions at
   the log end and waits until it has read the first record of every input partition, whose
   event times give `ts_start` (the maximum over inputs and partitions, 3.1.1 "Multiple-input
   window"); it sends `ts_start` to the origin (`reported`). Each partition's `ts_start` is one
   past its first record's event time: records with that same time may lie just before the
   connect offset, unread (a producer's batch can end inside a run of equal timestamps). Where
   windows precede the controlling one, the target's input to the controlling window is
   complete only from `ts_start + handoff.upstream_horizon` on (3.1.1 "Multiple window
   operators": `ts_start` as measured at the controlling window).
2. Time-based controlling window: the origin computes the migration timestamp by equation (1)
   from that `ts_start` and `ts_last_w` (the start of its controlling window's last fired
   window); the target activates at `ts_mi + s` (3.2.2) and keeps results whose split time is at
   or after it, the origin those before it (3.2.1's join suppression is the `min_ts` case of that
   split, see `handoff`). Tuple-based (`ROWS`) controlling window: the origin picks the boundary
   `C` (no earlier than `ts_start` and after every tuple it has counted), counts the tuples
   reaching its controlling window before `C` (`counting`, equation (2)'s `N`) and sends `C` and
   `s - delta`; the target's controlling window discards the tuples before `C` and the first
   `s - delta` from it (`unimico_rows`). Either way the message travels in `handing-off`, and the
   target's results are held until the origin has released the group, so per-key order holds
   (ARCHITECTURE.md, Output).
3. `origin-finishing`: the origin processes until the window that starts at the migration
   timestamp has fired (its watermark passes the activation plus the plan's horizon, or its
   `ROWS n` window has counted `n - 1` tuples from `C`), then releases the partitions.
4. `done`.
"""

from __future__ import annotations

from streamshift_engine.migration import handoff, timestamps, unimico_rows
from streamshift_engine.migration.cluster import Cluster
from streamshift_engine.migration.protocol import DONE, Protocol
from streamshift_engine.migration.tuple_gate import TupleGate
from streamshift_engine.plan.model import Plan


class UniMiCo(Protocol):
    name = "unimico"

    @classmethod
    def refusal(cls, plan: Plan, new_plan: Plan) -> str | None:
        reason = super().refusal(plan, new_plan)
        if reason is None and handoff.tuple_controlled(plan):
            reason = handoff.tuple_refusal(plan)
        elif reason is None:
            reason = handoff.time_bounded_refusal(plan)
        return f"unimico refuses {plan.name}: {reason}" if reason else None

    def begin(self, cluster: Cluster) -> None:
        self.enter(cluster, "connecting")
        self.send(cluster, "coordinator", "target", "migrate")
        self.connect_offsets: dict[tuple[str, int], int] = {}
        self.activation: int | None = None
        self.gate: TupleGate | None = None

    def on_step(self, cluster: Cluster) -> None:
        for message in cluster.transport.receive("target"):
            if message.kind == "migrate":
                self.connect_offsets = cluster.log.end_offsets(self.origin.partitions)
            elif message.kind == "migration_timestamp":
                self._activate_target(cluster, message.body)
        for message in cluster.transport.receive("origin"):
            self._hand_off(cluster, message.body["ts_start"])
        if self.phase == "connecting" and self.connect_offsets:
            self._report_start(cluster)
        if self.phase == "counting":
            self._count(cluster)
        if self.phase == "origin-finishing" and self._origin_complete(cluster):
            if self.origin.name in cluster.groups:
                cluster.remove(self.origin.name)
            if self.target is not None:
                cluster.emit(self.target.name, self.target.release_held())
            self.enter(cluster, DONE)

    def may_end_with_input(self) -> bool:
        """Not while the origin already drops what the not-yet-started target will produce."""
        return self.phase not in ("counting", "handing-off")

    def _report_start(self, cluster: Cluster) -> None:
        starts = []
        for (topic, partition), offset in self.connect_offsets.items():
            if cluster.log[topic].end_offset(partition) > offset:
                starts.append(cluster.log[topic].timestamp_at(partition, offset) + 1)
            elif not cluster.producer.exhausted:
                return
        self.send(cluster, "target", "origin", "ts_start", ts_start=max(starts, default=None))
        self.enter(cluster, "reported")

    def _hand_off(self, cluster: Cluster, ts_start: int | None) -> None:
        start = cluster.producer.end_ts if ts_start is None else ts_start
        start += handoff.upstream_horizon(self.plan)
        if handoff.tuple_controlled(self.plan):
            self._watch(cluster, start)
            return
        slide = handoff.grid_slide(self.plan)
        if ts_start is None:
            ts_mi = start
        else:
            ts_mi = timestamps.time_migration_timestamp(start, self._last_window(), slide)
        self.activation = timestamps.activation_timestamp(ts_mi, slide)
        self.origin.output_filter = handoff.before(self.activation)
        self.send(cluster, "origin", "target", "migration_timestamp", ts_mi=ts_mi)
        self.enter(cluster, "handing-off")

    def _watch(self, cluster: Cluster, start: int) -> None:
        self.gate, self.activation = unimico_rows.watch(self.plan, self.origin, start)
        self.enter(cluster, "counting")

    def _count(self, cluster: Cluster) -> None:
        """Once the count before the boundary is final, send it. Input that ends first ends the
        origin (it flushes)."""
        assert self.gate is not None and self.activation is not None
        if not self.gate.count_before_final and cluster.drained():
            cluster.emit(self.origin.name, self.origin.finish())
            cluster.remove(self.origin.name)
        if self.gate.count_before_final:
            body = unimico_rows.boundary_message(self.plan, self.gate, self.activation)
            self.send(cluster, "origin", "target", "migration_timestamp", **body)
            self.enter(cluster, "handing-off")

    def _last_window(self) -> int:
        """`ts_last_w`: start of the origin's last fired controlling window (grid-aligned)."""
        window = self.plan.controlling_window
        size, slide = (window.size, window.slide) if window and window.kind == "time" else (1, 1)
        watermark = self.origin.watermark()
        if watermark is None:
            return handoff.align(self.plan, -size - slide)
        return timestamps.last_fired_window_start(watermark, size, slide)

    def _activate_target(self, cluster: Cluster, body: dict[str, object]) -> None:
        target = self.new_target()
        target.reader.assign(self.connect_offsets)
        if self.gate is None:
            ts_mi = int(str(body["ts_mi"]))
            activation = timestamps.activation_timestamp(ts_mi, handoff.grid_slide(self.plan))
            target.output_filter = handoff.from_(activation)
        else:
            activation = unimico_rows.open_target(self.plan, target, body)
        target.min_ts = activation - handoff.upstream_horizon(self.plan)
        target.holding = True
        cluster.add(target)
        self.enter(cluster, "origin-finishing")

    def _origin_complete(self, cluster: Cluster) -> bool:
        if self.origin.name not in cluster.groups:
            return True
        if self.gate is not None:
            return self.gate.counted_from >= self.gate.size - 1
        watermark = self.origin.watermark()
        if watermark is None or self.activation is None:
            return False
        return watermark > self.activation + handoff.horizon(self.plan)
