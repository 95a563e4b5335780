"""Moving state (seed 001 (Zhu et al., Dynamic Plan Migration), 4.1) driven through the workers'
control API (docs/control-api.openapi.yaml), in the order of the runtime's own stack test.

1. PausingOrigin: every origin pod `pause`s its partitions at the current positions (the
   markers) and drains to them (`phase_steps.pause_origin`).
2. MovingState: each target `begin`s with `protocol: moving-state` and, per origin holding some
   of its partitions, that origin's control address and those partitions; for a plan change
   also `origin_plan`, the plan the origins run (the target runs its own, from its ConfigMap).
   The target pulls the states from the origins itself (the state never passes through the
   operator), matches them by state id and adopts the matched ones; the bytes it pulled are
   the state moved. A target may draw from several origins (a rescale), as each origin exports
   exactly the partitions asked for and releases them.
3. Recomputing: each target `recompute`s: unmatched states by Algorithm 1, then it runs from
   the positions its state covers; the events from there to the markers, which the origin read
   too, are the events processed twice.
Every call is keyed by the migration's name, so a repeated tick (or a call that timed out while
the target was still pulling) gets the first call's answer.
"""

from typing import Any

from streamshift_operator.migration import plan_change
from streamshift_operator.migration.run import Run


def _origins(run: Run, partitions: list[int]) -> list[dict[str, Any]]:
    """Where a target pulls `partitions` from: each origin's address and its share of them."""
    found = []
    for pod, parts in run.origin():
        share = sorted(set(parts) & set(partitions))
        if not share:
            continue
        found.append({"address": run.address(pod), "partitions": share})
    return found


def _origin_plan(run: Run) -> dict[str, Any]:
    """A plan change's origin plan, which the target restores the exported states into."""
    origin = run.placed.plan
    if origin is None or origin.wire() == run.plan:
        return {}
    return {"origin_plan": plan_change.document(origin)}


async def move_states(run: Run) -> bool:
    """Every target pulls and adopts its partitions' matched states from their origins."""
    moved = 0
    for pod, parts in run.targets():
        answer = await run.role(
            pod,
            "begin",
            parts,
            protocol="moving-state",
            origins=_origins(run, parts),
            **_origin_plan(run),
        )
        moved += int(answer["state_bytes"])
    run.learned["state_bytes"] = moved
    run.learned["twice"] = run.status.cost.events_processed_twice or 0
    return True


async def recompute(run: Run) -> bool:
    """Every target recomputes its unmatched states and runs on from its state's positions."""
    twice = 0
    for pod, parts in run.targets():
        answer = await run.role(pod, "recompute", parts)
        twice += int(answer["read_again"])
    run.learned["state_bytes"] = run.status.cost.state_bytes_moved or 0
    run.learned["twice"] = twice
    return True
