"""Pure records of a Migration: its duration from the phase timeline, its status patch, its
conditions, and the hand-over patch.

The protocol's duration runs from entering Preparing to entering Finalizing (the hand-off done):
removing the origin pods, measuring the gap and verifying the output are not part of it, so it
means the same on every run (the verification's own duration is `cost.verificationSeconds`). The
status is written as a merge patch in which a field set before and unset now is an explicit
null: omitting it would leave a stale message standing. The output
gap is measured on the output topic for every protocol (`output_gap.py`), not derived from phases: a
pausing protocol's targets emit only once they have restored and fired a window, and UniMiCo
and parallel-track keep the origin emitting until the targets take over at a window boundary.
"""

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from streamshift_operator.models.common import ConditionStatus
from streamshift_operator.models.migration import TERMINAL, Cost, MigrationStatus, Phase
from streamshift_operator.streamquery.status import conditions

T, F, U = ConditionStatus.TRUE, ConditionStatus.FALSE, ConditionStatus.UNKNOWN


def entered(status: MigrationStatus, phase: Phase) -> datetime | None:
    """When the migration first entered `phase`, or None."""
    return next((r.entered_at for r in status.phase_history if r.phase is phase), None)


def cost(status: MigrationStatus, now: datetime) -> Cost:
    """The cost with the protocol's duration (up to `now` while Finalizing was not entered)."""
    start = entered(status, Phase.PREPARING)
    end = entered(status, Phase.FINALIZING) or now
    duration = None if start is None else round((end - start).total_seconds(), 3)
    return status.cost.model_copy(update={"duration_seconds": duration})


def status_patch(status: BaseModel, as_read: BaseModel) -> dict[str, Any]:
    """The merge patch writing `status` over `as_read`: its wire form, with an explicit null
    for every field (at any depth of objects) `as_read` had and `status` no longer has."""
    new = status.model_dump(by_alias=True, exclude_none=True, mode="json")
    return _nulled(new, as_read.model_dump(by_alias=True, exclude_none=True, mode="json"))


def _nulled(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    patch: dict[str, Any] = {key: None for key in old.keys() - new.keys()}
    for key, value in new.items():
        was = old.get(key)
        nested = isinstance(value, dict) and isinstance(was, dict)
        patch[key] = _nulled(value, old[key]) if nested else value
    return patch


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


def migration_conditions(
    status: MigrationStatus, verify: bool, now: datetime
) -> list[dict[str, Any]]:
    """Progressing (not yet terminal), Ready (Succeeded) and, with `verify`, Verified (True
    only for an exact verification; Unknown until one ran)."""
    phase, why = status.phase, status.message or f"phase {status.phase}"
    done = phase in TERMINAL
    updates = [
        ("Progressing", F if done else T, phase.value, why),
        ("Ready", T if phase is Phase.SUCCEEDED else F, phase.value, why),
    ]
    if verify:
        check = status.verification
        if check is None:
            reason = "NotRun" if done else "Pending"
            said = "no verification ran" if done else "the output is verified in Finalizing"
            updates.append(("Verified", U, reason, said))
        else:
            said = check.message or ("exact" if check.exact else "not exact")
            updates.append(("Verified", T if check.exact else F, _verdict(check.exact), said))
    previous = [c.wire() for c in status.conditions]
    return conditions(previous, now, updates)


def _verdict(exact: bool) -> str:
    return "Exact" if exact else "NotExact"
