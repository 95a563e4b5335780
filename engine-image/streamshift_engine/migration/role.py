"""A protocol's part on one instance: the hooks a driver calls around its step.

A driver (the in-process `Group` or the worker) keeps the roles active on its instance and calls,
on every step, `on_input` with the records it read (before feeding them), `on_output` with the
results it polled and `on_dead_letters` with the dead letters of the step (before writing them),
and `after_output` once they are written; a role's actions (`handoff`, `activate`, ...) are
methods that the coordinator's messages (in process) or the control API (in the worker) invoke.
A role keeps its migration's name, so a report is never taken for one of an earlier migration on
the same instance.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, ClassVar, TypeVar

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter, dead_letters_of
from streamshift_engine.migration.port import InstancePort, Position, positions_of

R = TypeVar("R", bound="Role")


class Role:
    """One instance's part in one migration (its `side`: origin or target)."""

    protocol: ClassVar[str]
    side: ClassVar[str]

    def __init__(self, migration: str, partitions: frozenset[int]) -> None:
        self.migration = migration
        self.partitions = partitions
        self.done = False

    def on_input(self, port: InstancePort, batches: dict[Position, Batch]) -> dict[Position, Batch]:
        """The records read this step, before they are fed: the role may keep back or drop
        records of its partitions."""
        return batches

    def on_output(self, port: InstancePort, results: list[ResultBatch]) -> list[ResultBatch]:
        """The results polled this step, before they are written: the role keeps its side."""
        return results

    def on_dead_letters(self, port: InstancePort, letters: list[DeadLetter]) -> list[DeadLetter]:
        """The step's dead letters, before they are written: a record both sides read goes to
        the dead letters once."""
        return letters

    def after_output(self, port: InstancePort) -> None:
        """The step's output is written: the role may finish (`port.hand_over`)."""

    def end_of_input(self, port: InstancePort) -> list[ResultBatch]:
        """In-process runs only: the input ended (every live instance flushes); what the role
        still holds, in order."""
        return []

    def taking_over(self) -> frozenset[int]:
        """Partitions this instance reads for the migration but does not own yet: their origin
        commits them until then, so this instance's commits and snapshots leave them out."""
        return frozenset()

    def splitting_output(self) -> frozenset[int]:
        """Partitions whose results this instance splits with a target: it emits its side
        only, so its commits mark their positions and it takes no snapshot of them meanwhile
        (an origin recovered by a rollback then emits what the output lacks,
        `runtime.published`)."""
        return frozenset()

    def prompt_commits(self) -> bool:
        """Whether the other side waits on this instance's commits (commit at the short
        interval)."""
        return False

    def phase(self) -> str:
        """What the instance is doing for this role (the worker's phase)."""
        return "running" if self.done else f"{self.protocol} {self.side}"

    def report(self) -> dict[str, Any]:
        """What the coordinator reads of this role (in the worker's status)."""
        return {
            "protocol": self.protocol,
            "migration": self.migration,
            "role": self.side,
            "partitions": sorted(self.partitions),
            "done": self.done,
            "splitting_output": sorted(self.splitting_output()),
        }


class HoldingTarget(Role):
    """A target that holds its results and dead letters of the moving partitions until its
    origin has handed them over (the protocols that move no state): then the results become
    visible after the origin's last one, and of the dead letters those of records the origin
    never read (at or after its hand-over offsets; the origin sent the others)."""

    side = "target"

    def __init__(self, migration: str, partitions: frozenset[int]) -> None:
        super().__init__(migration, partitions)
        self.held: list[ResultBatch] = []
        self.held_letters: list[DeadLetter] = []
        self.handed_over_at: dict[Position, int] = {}

    def from_floor(self, batches: dict[Position, Batch], floor: int) -> dict[Position, Batch]:
        """The moving partitions' records from event time `floor` on (those before it are the
        origin's, or late: held as dead letters, `on_dead_letters` decides)."""
        kept = {}
        for position, batch in batches.items():
            if is_moving(self.partitions, position) and len(batch):
                early = batch.ts < floor
                if early.any():
                    self.held_letters += dead_letters_of(batch.take(early), "late")
                    batch = batch.take(~early)
            kept[position] = batch
        return kept

    def on_dead_letters(self, port: InstancePort, letters: list[DeadLetter]) -> list[DeadLetter]:
        letters, self.held_letters = self.held_letters + letters, []
        if self.done:
            return read_by_target_only(letters, self.partitions, self.handed_over_at)
        self.held_letters = [x for x in letters if x.partition in self.partitions]
        return [x for x in letters if x.partition not in self.partitions]

    def release_output(
        self, port: InstancePort, handed_over_at: dict[Position, int]
    ) -> dict[str, Any]:
        """The origin has handed over at these offsets: write what was held (once)."""
        if not self.done:
            self.done = True
            self.handed_over_at = dict(handed_over_at)
            letters, self.held_letters = self.held_letters, []
            held, self.held = self.held, []
            port.send_dead_letters(read_by_target_only(letters, self.partitions, handed_over_at))
            port.emit(held)
        return self.report()

    def end_of_input(self, port: InstancePort) -> list[ResultBatch]:
        """The origin read all input (and sent its dead letters): the held results follow."""
        self.done = True
        self.handed_over_at = {p: 1 << 62 for p in positions_of(port.plan, self.partitions)}
        held, self.held, self.held_letters = self.held, [], []
        return held

    def taking_over(self) -> frozenset[int]:
        return frozenset() if self.done else self.partitions

    def report(self) -> dict[str, Any]:
        return {**super().report(), "held": sum(len(r) for r in self.held)}


RoleAction = Callable[
    [dict[str, "Role"], InstancePort, str, dict[str, Any]], "dict[str, Any] | Future[Any]"
]
"""A control action: the instance's roles by migration, its port, the migration and the
request; answers the report (`"again": True` when the caller must ask again later), or a future
of it (a snapshot's upload)."""


def role_of(roles: dict[str, Role], migration: str, kind: type[R]) -> R:
    """The role this instance plays in `migration`, checked to be a `kind`."""
    role = roles.get(migration)
    if not isinstance(role, kind):
        raise ValueError(f"this worker is no {kind.protocol} {kind.side} of migration {migration}")
    return role


def release_output_of(kind: type[HoldingTarget]) -> RoleAction:
    """The `release-output` action of a holding target of `kind`: its held output, with the
    origin's hand-over offsets from the request."""

    def release(
        roles: dict[str, Role], port: InstancePort, migration: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        target = role_of(roles, migration, kind)
        return target.release_output(port, parse_positions(dict(body.get("handed_over_at") or {})))

    return release


def partitions_of(body: dict[str, Any]) -> frozenset[int]:
    parts = body.get("partitions")
    if not parts:
        raise ValueError("'partitions' is required")
    return frozenset(int(p) for p in parts)


def is_moving(partitions: frozenset[int], position: Position) -> bool:
    return position[1] in partitions


def position_key(position: Position) -> str:
    """`input:partition`, the control API's name of a position."""
    return f"{position[0]}:{position[1]}"


def parse_positions(table: dict[str, int]) -> dict[Position, int]:
    """`{"input:partition": offset}` back to positions."""
    parsed = {}
    for key, offset in table.items():
        name, _, partition = key.rpartition(":")
        parsed[(name, int(partition))] = int(offset)
    return parsed


def read_by_target_only(
    letters: list[DeadLetter], partitions: frozenset[int], handed_over_at: dict[Position, int]
) -> list[DeadLetter]:
    """A target's dead letters of the moving partitions that its origin never read (at or
    after the offsets the origin handed the partitions over at): the origin sent the others."""
    return [
        letter
        for letter in letters
        if letter.partition not in partitions
        or letter.offset >= handed_over_at.get((letter.source, letter.partition), 0)
    ]
