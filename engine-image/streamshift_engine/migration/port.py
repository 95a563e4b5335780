"""The port a migration role drives: what a protocol needs of the instance it runs on.

One logic, two drivers (docs/architecture.md, "One protocol, two drivers"): each protocol's
roles (`role.Role`) are written once against `InstancePort`, and two drivers implement it: the
in-process `Group` over the partitioned `Log` (what the randomized checks run) and the worker
over Kafka (`runtime.loop.Worker`). A driver calls a role's hooks around its own
read-feed-poll-emit step and its actions when the coordinator asks; the role never sees Kafka,
HTTP or the in-process log.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Protocol

from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter
from streamshift_engine.pipeline import Pipeline
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Instance

Position = tuple[str, int]


class InstancePort(Protocol):
    """An engine instance with its input reader and its output, as a role sees it."""

    @property
    def plan(self) -> Plan:
        """The plan the instance runs."""

    @property
    def pipeline(self) -> Pipeline:
        """The instance's running operators (a role may wrap one, `TupleGate`)."""

    def watermark(self) -> int | None:
        """The instance's watermark (None until every partition it reads has a record)."""

    def owned(self) -> frozenset[int]:
        """The partitions the instance reads (owned or being taken over)."""

    def read_back_offsets(self, positions: Collection[Position], ts: int) -> dict[Position, int]:
        """Per position, an offset from which every record with event time `ts` or later is
        read (not later than the first such record)."""

    def end_offsets(self, positions: Collection[Position]) -> dict[Position, int]:
        """The log end of each position now (the offset the next record gets)."""

    def read_from(self, offsets: Mapping[Position, int]) -> None:
        """Own these positions and (re)start reading them at these offsets."""

    def stop_reading(self, positions: Collection[Position]) -> None:
        """Fetch no more of these positions until `read_from` names them again."""

    def positions_read(self) -> Mapping[Position, int]:
        """Per owned position, the offset after the last record read."""

    def hand_over(self, partitions: Collection[int]) -> None:
        """Commit what is due and let these partitions go (another instance owns them now)."""

    def emit(self, results: list[ResultBatch]) -> None:
        """Write results now and make them visible (a target's held output)."""

    def send_dead_letters(self, letters: list[DeadLetter]) -> None:
        """Send records to the dead-letter topic now (a target's held ones)."""


class StatePort(InstancePort, Protocol):
    """What the state-moving protocols (`state_moving_roles`) need besides: stop at marker
    positions, save or export the state of chosen partitions with the positions it covers,
    restore what travelled, install an instance, resume reading, stop. What travels is the
    driver's: in process a message holding the snapshot, in the worker an object in S3 (found
    by the target by its partitions) or the bytes the target pulls over HTTP."""

    @property
    def query(self) -> str:
        """The query the instance runs (an export names it; a target checks it)."""

    def stop_at(self, offsets: Mapping[Position, int]) -> None:
        """Feed nothing of these positions at or after these offsets (the marker)."""

    def state_covers(self, partitions: Collection[int]) -> dict[Position, int]:
        """Per position of `partitions`, the first offset the instance's state does not cover
        (`Instance.covered()`): the state plus the log from there lose and repeat nothing."""

    def save_state(self, partitions: Collection[int], migration: str) -> Any:
        """Save the state of `partitions` with the positions it covers where the target finds
        it (the worker: commit, then a snapshot to S3; answers a future of its manifest)."""

    def export_state(self, partitions: Collection[int]) -> list[bytes | memoryview]:
        """The state of `partitions` as the instance's snapshot parts (no copy)."""

    def restore_saved(
        self, partitions: Collection[int], migration: str, saved: Any
    ) -> tuple[dict[Position, int], dict[str, Any]]:
        """Restore the state of `partitions` the origin of `migration` saved (`saved`: what
        travelled, or None where the driver finds it itself); answer the positions it covers
        and a report. The worker refuses a state its origin saved under another plan version
        (the in-process driver restores by operator id: the modifications of seed 003 (Bartnik et
        al., On-the-fly Reconfiguration), 3.3)."""

    def fresh_instance(self, partitions: Collection[int]) -> Instance:
        """An empty instance of the port's plan for `partitions`, not yet installed."""

    def install(self, instance: Instance) -> None:
        """Run `instance` from now on (it holds the state of the partitions to take over)."""

    def resume_from(self, offsets: Mapping[Position, int]) -> dict[Position, int]:
        """Own these positions and read from these offsets with the state in place (the worker
        replays to its query's committed positions with committed output suppressed); answer
        the records read again per position."""

    def stop(self) -> Any:
        """Save the whole state and end the instance (a savepoint; a future in the worker)."""


def positions_of(plan: Plan, partitions: Collection[int]) -> list[Position]:
    """Every (input, partition) pair of `partitions`, in a stable order."""
    return [(spec.name, p) for spec in plan.inputs for p in sorted(partitions)]
