"""The hand-over of a Migration: the query's spec and status take the target placement.

First the spec, as a user would write it: `parallelism` (as `kubectl scale` would) and, for a
plan change, `plan`, so the spec says what runs and the query's reconciler sees no difference
to migrate back (a Migration the operator made from a spec change finds the spec as it is).
Then the status (`handover_patch`): epoch, instances and the plan the targets run, written with
the resourceVersion read, so the hand-over happens once; a lost race is tried on the next tick.
Both are JSON merge patches: `replacing` nulls what the old value had and the new one lacks
(a plan going from `inline` to `builtin`, or an inline plan losing a field).
"""

from typing import Any

from streamshift_operator.clients.kube import STREAM_QUERIES
from streamshift_operator.context import Context
from streamshift_operator.migration.status import handover_patch
from streamshift_operator.models.migration import MigrationSpec, MigrationStatus
from streamshift_operator.models.streamquery import StreamQueryStatus


def replacing(old: Any, new: Any) -> Any:
    """A merge patch turning `old` into exactly `new`."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch = {key: None for key in old if key not in new}
    patch.update({key: replacing(old.get(key), value) for key, value in new.items()})
    return patch


async def hand_over(
    ctx: Context, query: dict[str, Any], spec: MigrationSpec, status: MigrationStatus
) -> bool:
    """True once the query's status names the target epoch."""
    meta = query["metadata"]
    placed = StreamQueryStatus.model_validate(query.get("status") or {})
    if placed.epoch == status.target_epoch:
        return True
    wanted: dict[str, Any] = {"parallelism": len(status.target_instances)}
    if spec.target.plan is not None:
        wanted["plan"] = spec.target.plan.wire()
    changed = {k: v for k, v in wanted.items() if query["spec"].get(k) != v}
    if changed:
        patch = {k: replacing(query["spec"].get(k), v) for k, v in changed.items()}
        await ctx.kube.patch_spec(STREAM_QUERIES, meta["namespace"], meta["name"], patch)
        return False  # read the query again (new resourceVersion) on the next tick
    plan = query.get("status", {}).get("plan")
    target = None if spec.target.plan is None else replacing(plan, spec.target.plan.wire())
    return await ctx.kube.patch_status(
        STREAM_QUERIES,
        meta["namespace"],
        meta["name"],
        handover_patch(status, target),
        meta["resourceVersion"],
    )
