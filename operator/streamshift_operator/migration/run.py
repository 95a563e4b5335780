"""One tick of one Migration as its steps see it: what was read, and how to call a worker."""

from dataclasses import dataclass, field
from typing import Any

from streamshift_operator.clients.control_api import ControlClient, ControlError
from streamshift_operator.context import Context
from streamshift_operator.models.migration import MigrationStatus
from streamshift_operator.models.streamquery import StreamQuerySpec, StreamQueryStatus
from streamshift_operator.resources.names import pod_name
from streamshift_operator.resources.pods import CONTROL_PORT, QueryIdentity
from streamshift_operator.streamquery.observe import QueryView


@dataclass
class Run:
    """One tick of one migration: what was read, and the cost figures its steps learn."""

    ctx: Context
    control: ControlClient
    name: str
    query: QueryIdentity
    spec: StreamQuerySpec
    placed: StreamQueryStatus  # the query's status: the origin placement until the hand-over
    status: MigrationStatus
    view: QueryView
    plan: dict[str, Any]  # the plan the target pods run
    learned: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what a step did that users must hear of

    def pods(self, epoch: int | None) -> list[str]:
        return sorted(p.name for p in self.view.pods.values() if p.epoch == epoch)

    def origin(self) -> list[tuple[str, list[int]]]:
        return [
            (pod_name(self.query.name, self.placed.epoch, i.id), i.partitions)
            for i in self.placed.instances
        ]

    def targets(self) -> list[tuple[str, list[int]]]:
        epoch = self.status.target_epoch
        return [
            (pod_name(self.query.name, epoch or 0, i.id), i.partitions)
            for i in self.status.target_instances
        ]

    async def role(
        self, pod: str, action: str, partitions: list[int] | None, **extra: Any
    ) -> dict[str, Any]:
        """POST a role request to `pod` keyed by this migration, naming its protocol
        (ControlError if it cannot)."""
        body = {"protocol": str(self.status.protocol), **extra}
        if partitions is not None:
            body["partitions"] = partitions
        return await self.control.call(self.ip(pod), f"/v1/migrations/{self.name}/{action}", body)

    def ip(self, pod: str) -> str:
        """The IP of `pod` if it is running (ControlError otherwise)."""
        view = self.view.pods.get(pod)
        if view is None or view.ip is None or not self.view.running(pod):
            raise ControlError(f"{pod} is not running", None)
        return view.ip

    def address(self, pod: str) -> str:
        """The control API address (`ip:port`) of a running `pod`, as one worker calls another."""
        return f"{self.ip(pod)}:{CONTROL_PORT}"
