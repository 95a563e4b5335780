"""UniMiCo (seed 000): hand a partition group over at a window boundary, moving no state.

Phases, following Algorithms 1 (target) and 2 (origin) of section 3.2:

1. `connecting`: the coordinator sends `migrate`; the target is assigned the group's partitions at
   the log end and waits until it has read the first record of every input partition, whose
   event times give `ts_start` (the maximum over inputs and partitions, 3.1.1 "Multiple-input
   window"); it sends `ts_start` to the origin.
2. `handing-off`: the origin computes the migration timestamp by equation (1) from `ts_start` and
   `ts_last_w` (the start of its controlling window's last fired window) and sends it back; the
   target activates at `ts_mi + s` (3.2.2): it drops earlier records and keeps results whose split
   time is at or after the activation, the origin keeps only those before it (3.2.1's join
   suppression is the `min_ts` case of that split, see `handoff`); the target's results are held
   until the origin has released the group, so per-key order holds (ARCHITECTURE.md, Output).
3. `origin-finishing`: the origin keeps processing until its watermark passes the activation plus
   the plan's horizon (the window starting at `ts_mi` has fired), then releases the partitions.
4. `done`.

Tuple-based controlling windows (equation (2) and the `s - delta` discard) need the count of
tuples reaching the controlling window, which the engine does not expose per partition group:
`refusal` names them, and `timestamps.tuple_migration_timestamp` holds the arithmetic.
"""

from __future__ import annotations

from streamshift_engine.migration import handoff, timestamps
from streamshift_engine.migration.cluster import Cluster
from streamshift_engine.migration.protocol import DONE, Protocol
from streamshift_engine.plan.model import Plan


class UniMiCo(Protocol):
    name = "unimico"

    @classmethod
    def refusal(cls, plan: Plan, new_plan: Plan) -> str | None:
        reason = super().refusal(plan, new_plan) or handoff.time_bounded_refusal(plan)
        return f"unimico refuses {plan.name}: {reason}" if reason else None

    def begin(self, cluster: Cluster) -> None:
        self.enter(cluster, "connecting")
        self.send(cluster, "coordinator", "target", "migrate")
        self.connect_offsets: dict[tuple[str, int], int] = {}
        self.activation: int | None = None

    def on_step(self, cluster: Cluster) -> None:
        for message in cluster.transport.receive("target"):
            if message.kind == "migrate":
                self.connect_offsets = cluster.log.end_offsets(self.origin.partitions)
            elif message.kind == "migration_timestamp":
                self._activate_target(cluster, int(message.body["ts_mi"]))
        for message in cluster.transport.receive("origin"):
            self._hand_off(cluster, message.body["ts_start"])
        if self.phase == "connecting" and self.connect_offsets:
            self._report_start(cluster)
        if self.phase == "origin-finishing" and self._origin_complete():
            cluster.remove(self.origin.name)
            if self.target is not None:
                cluster.emit(self.target.name, self.target.release_held())
            self.enter(cluster, DONE)

    def may_end_with_input(self) -> bool:
        """Not while the migration timestamp travels: the origin already drops what the
        not-yet-started target will produce."""
        return self.phase != "handing-off"

    def _report_start(self, cluster: Cluster) -> None:
        starts = []
        for (topic, partition), offset in self.connect_offsets.items():
            if cluster.log[topic].end_offset(partition) > offset:
                starts.append(cluster.log[topic].timestamp_at(partition, offset))
            elif not cluster.producer.exhausted:
                return
        self.send(cluster, "target", "origin", "ts_start", ts_start=max(starts, default=None))
        self.enter(cluster, "reported")

    def _hand_off(self, cluster: Cluster, ts_start: int | None) -> None:
        slide = handoff.grid_slide(self.plan)
        if ts_start is None:
            ts_mi = cluster.producer.end_ts
        else:
            ts_mi = timestamps.time_migration_timestamp(ts_start, self._last_window(), slide)
        self.activation = timestamps.activation_timestamp(ts_mi, slide)
        self.origin.output_filter = handoff.before(self.activation)
        self.send(cluster, "origin", "target", "migration_timestamp", ts_mi=ts_mi)
        self.enter(cluster, "handing-off")

    def _last_window(self) -> int:
        """`ts_last_w`: start of the origin's last fired controlling window (grid-aligned)."""
        window = self.plan.controlling_window
        size, slide = (window.size, window.slide) if window and window.kind == "time" else (1, 1)
        watermark = self.origin.watermark()
        if watermark is None:
            return handoff.align(self.plan, -size - slide)
        return timestamps.last_fired_window_start(watermark, size, slide)

    def _activate_target(self, cluster: Cluster, ts_mi: int) -> None:
        activation = timestamps.activation_timestamp(ts_mi, handoff.grid_slide(self.plan))
        target = self.new_target()
        target.reader.assign(self.connect_offsets)
        target.min_ts = activation
        target.output_filter = handoff.from_(activation)
        target.holding = True
        cluster.add(target)
        self.enter(cluster, "origin-finishing")

    def _origin_complete(self) -> bool:
        watermark = self.origin.watermark()
        if watermark is None or self.activation is None:
            return False
        return watermark > self.activation + handoff.horizon(self.plan)
