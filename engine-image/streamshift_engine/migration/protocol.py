"""What every migration protocol is: a state machine with named phases over a `Cluster`.

A protocol moves one partition group from an origin `Group` to a new target `Group` (built by an
`InstanceFactory`, possibly for a new plan). `refusal(plan, new_plan)` says up front why it
cannot migrate a plan exactly (None when it can; `capability` decides); `begin` starts it;
`on_step` is called once per cluster tick, reads the protocol's messages from the transport and
moves to the next phase when its condition holds. Each phase entered is recorded with its step
and wall-clock time."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from streamshift_engine.migration import capability
from streamshift_engine.migration.cluster import Cluster, InstanceFactory, wall_clock
from streamshift_engine.migration.group import Group
from streamshift_engine.migration.transport import Message
from streamshift_engine.plan.model import Plan

DONE = "done"


@dataclass(frozen=True)
class PhaseEntry:
    phase: str
    step: int
    wall: float


class Protocol(ABC):
    """A migration of `origin` to a group called `target_name`, running `new_plan`."""

    name: ClassVar[str]

    def __init__(
        self, origin: Group, target_name: str, plan: Plan, new_plan: Plan, factory: InstanceFactory
    ) -> None:
        self.origin = origin
        self.target_name = target_name
        self.plan = plan
        self.new_plan = new_plan
        self.factory = factory
        self.target: Group | None = None
        self.phases: list[PhaseEntry] = []
        self.state_bytes_moved = 0

    @classmethod
    def refusal(cls, plan: Plan, new_plan: Plan) -> str | None:
        """Why this protocol cannot migrate `plan` to `new_plan` exactly, or None
        (`capability`, the one place every caller asks)."""
        return capability.refusal(cls.name, plan, new_plan)

    @property
    def phase(self) -> str:
        return self.phases[-1].phase if self.phases else "requested"

    @property
    def done(self) -> bool:
        return self.phase == DONE

    def may_end_with_input(self) -> bool:
        """Whether end of input may stop the migration in this phase (every live group then
        flushes what it holds and the result is still exact)."""
        return True

    def enter(self, cluster: Cluster, phase: str) -> None:
        self.phases.append(PhaseEntry(phase, cluster.step_number, wall_clock()))

    def send(
        self, cluster: Cluster, sender: str, recipient: str, kind: str, **body: object
    ) -> None:
        cluster.transport.send(Message(sender, recipient, kind, dict(body)))

    def new_target(self) -> Group:
        group = Group(
            self.target_name,
            self.factory(self.new_plan),
            self.origin.log,
            self.origin.partitions,
        )
        self.target = group
        return group

    @abstractmethod
    def begin(self, cluster: Cluster) -> None:
        """The coordinator starts the migration."""

    @abstractmethod
    def on_step(self, cluster: Cluster) -> None:
        """React to this tick's messages and conditions."""
