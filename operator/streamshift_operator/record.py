"""Pure records of a Migration: its cost from the phase timeline, and the hand-over patch.

Duration runs from entering Preparing to the cost being recorded (in Finalizing). The output gap
of the moving partitions, for a protocol that pauses them, runs from its first step after
Preparing to the hand-over, when the targets run live; it is an upper bound, as a target emits
as soon as it has adopted its partitions. UniMiCo and parallel-track keep the origin emitting
until the targets take over at a window boundary; their gap is not measured by the operator.
"""

from datetime import datetime
from typing import Any

from streamshift_operator.machine import STEPS
from streamshift_operator.models.migration import Cost, MigrationStatus, Phase, Protocol

# Protocols that stop the moving partitions' output for a while (the others hand over at a
# window boundary while the origin keeps emitting: their gap is not measured here).
PAUSING = frozenset({Protocol.MOVING_STATE, Protocol.STATE_TRANSFER, Protocol.SAVEPOINT_RESTART})


def entered(status: MigrationStatus, phase: Phase) -> datetime | None:
    """When the migration first entered `phase`, or None."""
    return next((r.entered_at for r in status.phase_history if r.phase is phase), None)


def cost(status: MigrationStatus, now: datetime) -> Cost:
    start = entered(status, Phase.PREPARING)
    handed = entered(status, Phase.HANDING_OVER)
    first = None
    if status.protocol in PAUSING and status.protocol in STEPS:
        first = entered(status, STEPS[status.protocol][0])
    return status.cost.model_copy(
        update={
            "duration_seconds": None if start is None else round((now - start).total_seconds(), 3),
            "output_gap_seconds": None
            if first is None or handed is None
            else round((handed - first).total_seconds(), 3),
        }
    )


def handover_patch(status: MigrationStatus) -> dict[str, Any]:
    """The query's status once the targets own the partitions."""
    return {
        "epoch": status.target_epoch,
        "instances": [
            {"id": i.id, "pod": "", "partitions": i.partitions} for i in status.target_instances
        ],
        "replicas": len(status.target_instances),
    }
