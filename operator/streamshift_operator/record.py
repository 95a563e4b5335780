"""Pure records of a Migration: its duration from the phase timeline, and the hand-over patch.

Duration runs from entering Preparing to the cost being recorded (in Finalizing). The output
gap is measured on the output topic for every protocol (`gap.py`), not derived from phases: a
pausing protocol's targets emit only once they have restored and fired a window, and UniMiCo
and parallel-track keep the origin emitting until the targets take over at a window boundary.
"""

from datetime import datetime
from typing import Any

from streamshift_operator.models.migration import Cost, MigrationStatus, Phase


def entered(status: MigrationStatus, phase: Phase) -> datetime | None:
    """When the migration first entered `phase`, or None."""
    return next((r.entered_at for r in status.phase_history if r.phase is phase), None)


def cost(status: MigrationStatus, now: datetime) -> Cost:
    start = entered(status, Phase.PREPARING)
    duration = None if start is None else round((now - start).total_seconds(), 3)
    return status.cost.model_copy(update={"duration_seconds": duration})


def handover_patch(status: MigrationStatus, plan: Any = None) -> dict[str, Any]:
    """The query's status once the targets own the partitions; with `plan` (a merge patch of
    the status's plan), the plan they run."""
    patch = {
        "epoch": status.target_epoch,
        "instances": [
            {"id": i.id, "pod": "", "partitions": i.partitions} for i in status.target_instances
        ],
        "replicas": len(status.target_instances),
    }
    return patch if plan is None else {**patch, "plan": plan}
