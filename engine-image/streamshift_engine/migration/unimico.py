"""UniMiCo (seed 000 (Pham et al.)) in process: the coordinator's messages between the
roles of `unimico_roles`, the same roles the worker runs.

Phases (section 3.2):

1. `connecting`: the coordinator sends `migrate`; the target group starts (`UniMiCoTarget`):
   it reads the moving partitions from the log end and probes their first event times.
2. `reported`: the target's `ts_start` is known and travels to the origin.
3. `handing-off`: the origin (`UniMiCoOrigin.handoff`) fixes the split (equation (1), or for a
   `ROWS` window equation (2) once its count before the boundary is final) and its answer
   travels to the target.
4. `origin-finishing`: the target runs from the split and holds its output; the origin emits
   what precedes the split and hands over; once both happened the target's held output is
   released: `done`.

End of input may end the run before the origin starts filtering or once the target runs (every
live group flushes its side); an origin still counting tuples before a `ROWS` boundary when the
input ends flushes everything itself (no tuple reached the boundary).
"""

from __future__ import annotations

from streamshift_engine.migration.cluster import Cluster
from streamshift_engine.migration.protocol import DONE, Protocol
from streamshift_engine.migration.unimico_roles import UniMiCoOrigin, UniMiCoTarget, start_of


class UniMiCo(Protocol):
    name = "unimico"

    def begin(self, cluster: Cluster) -> None:
        self.enter(cluster, "connecting")
        self.send(cluster, "coordinator", "target", "migrate")
        self.target_role: UniMiCoTarget | None = None
        self.origin_role: UniMiCoOrigin | None = None
        self.ts_start: int | None = None

    def on_step(self, cluster: Cluster) -> None:
        for message in cluster.transport.receive("target"):
            if message.kind == "migrate":
                self._start_target(cluster)
            elif message.kind == "activate" and self.target is not None and self.target_role:
                self.target_role.activate(self.target, message.body)
                self.enter(cluster, "origin-finishing")
        for message in cluster.transport.receive("origin"):
            self.ts_start = int(message.body["ts_start"])
            self.origin_role = UniMiCoOrigin(self.name, self.origin.partitions)
            self.origin.roles.append(self.origin_role)
        if self.phase == "connecting" and self.target_role is not None:
            start = start_of([self.target_role.ts_start()])
            if start is not None:
                self.send(cluster, "target", "origin", "ts_start", ts_start=start)
                self.enter(cluster, "reported")
        origin = self.origin_role
        if origin is not None and self.ts_start is not None and self.phase == "reported":
            answer = origin.handoff(self.origin, self.ts_start)
            if answer["ready"]:
                self.send(cluster, "origin", "target", "activate", **answer)
                self.enter(cluster, "handing-off")
            elif cluster.drained():
                self._end_counting(cluster)
        if origin is not None and origin.done and self._target_active() and self.phase != DONE:
            self._finish(cluster, origin)

    def may_end_with_input(self) -> bool:
        """Not while the origin already drops what the not-yet-started target will produce."""
        return self.phase == DONE or self.origin_role is None or self._target_active()

    def _target_active(self) -> bool:
        return self.target_role is not None and self.target_role.activation is not None

    def _start_target(self, cluster: Cluster) -> None:
        target = self.new_target()
        self.target_role = UniMiCoTarget(self.name, target.partitions, target)
        target.roles.append(self.target_role)
        cluster.add(target)

    def _end_counting(self, cluster: Cluster) -> None:
        """The input ended before any tuple reached the `ROWS` boundary: the origin, which
        read it all, takes the hand-off back and flushes everything."""
        assert self.origin_role is not None
        self.origin_role.take_back()
        cluster.emit(self.origin.name, self.origin.finish())
        cluster.remove(self.origin.name)
        self.enter(cluster, DONE)

    def _finish(self, cluster: Cluster, origin: UniMiCoOrigin) -> None:
        if self.origin.name in cluster.groups:
            cluster.remove(self.origin.name)
        if self.target is not None and self.target_role is not None:
            self.target_role.release_output(self.target, origin.handed_over_at)
            cluster.emit(self.target.name, self.target.take_outbox())
        self.enter(cluster, DONE)
