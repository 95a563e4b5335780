"""What a decision writes: `status.autoscaler` and, when it acts, the Migration (pure).

The status keeps the last decision, what it saw, the scale-down pending (the decision's memory,
so an operator restart keeps the delay it had waited), and the recent rescaling decisions (at
most `HISTORY`, newest last; a recommend-only decision enters the history when its
recommendation changes). The Migration is named after the placement's epoch and the chosen
parallelism, so a retried pass creates it once; it is owned by the query, carries the reason in
an annotation, uses the autoscaler's protocol (`protocol_of`), and verifies its output
(`spec.verify`): a rescale nobody asked for is proven exact, or its Verified condition says what
differed. A retry after a Migration that rolled back (same epoch) gets a numbered name of its
own.
"""

import math
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

from streamshift_engine.migration import capability
from streamshift_engine.plan.model import Plan

from streamshift_operator.autoscaler.decision import Action, Decision
from streamshift_operator.autoscaler.inputs import Capacity, Observation, PendingScaleDown
from streamshift_operator.models.common import API_VERSION
from streamshift_operator.models.protocol import Protocol
from streamshift_operator.models.streamquery import (
    AutoscalerDecision,
    AutoscalerSpec,
    AutoscalerStatus,
)
from streamshift_operator.models.streamquery import PendingScaleDown as PendingStatus

HISTORY = 10
REASON_ANNOTATION = "streamshift.io/autoscaler-reason"
CAUSE_LABEL = "streamshift.io/cause"


def pending_of(status: AutoscalerStatus | None) -> PendingScaleDown | None:
    """The scale-down pending in status, on the decision's clock (epoch seconds)."""
    if status is None or status.pending_scale_down is None:
        return None
    pending = status.pending_scale_down
    return PendingScaleDown(pending.since.timestamp(), pending.parallelism)


def loaded_of(status: AutoscalerStatus | None) -> Capacity | None:
    """The remembered rate in status (one without its busy fraction, from an operator before
    it was recorded, counts as the lightest: the next measurement replaces it)."""
    if status is None or status.loaded_true_rate is None:
        return None
    return Capacity(status.loaded_true_rate, status.loaded_busy_ratio or 0.0)


def migration_name(query: str, epoch: int, parallelism: int, taken: Collection[str] = ()) -> str:
    """`<query>-autoscale-e<epoch>-p<parallelism>`, or with `-2`, `-3`, ... after it when
    that name is `taken`: a Migration that rolled back left the placement (and its epoch) as
    it was, and the next attempt needs a name of its own."""
    base = f"{query}-autoscale-e{epoch}-p{parallelism}"
    attempt, name = 1, base
    while name in taken:
        attempt += 1
        name = f"{base}-{attempt}"
    return name


def status_patch(
    previous: AutoscalerStatus | None,
    decision: Decision,
    obs: Observation,
    migration: str | None,
) -> dict[str, Any]:
    """`status.autoscaler` after `decision` on `obs` (and the Migration it created, if any)."""
    at = datetime.fromtimestamp(obs.at, UTC)
    history = list(previous.history) if previous is not None else []
    last_recommended = previous.recommended_parallelism if previous is not None else None
    rescaling = decision.action is not Action.HOLD
    if rescaling and (decision.act or decision.parallelism != last_recommended):
        history.append(
            AutoscalerDecision(
                time=at,
                action=decision.action.value,
                from_parallelism=obs.parallelism,
                to_parallelism=decision.parallelism,
                reason=decision.reason[:1024],
                migration=migration,
            )
        )
    pending = decision.pending
    updated = AutoscalerStatus(
        recommended_parallelism=decision.parallelism,
        action=decision.action.value,
        reason=decision.reason[:1024],
        last_decision_time=at,
        input_rate=round(obs.input_rate, 1),
        true_rate=None if decision.true_rate is None else round(decision.true_rate, 1),
        loaded_true_rate=None if decision.loaded is None else round(decision.loaded.rate, 1),
        loaded_busy_ratio=None if decision.loaded is None else round(decision.loaded.busy_ratio, 4),
        lag_seconds=None if math.isinf(obs.lag_seconds) else round(obs.lag_seconds, 1),
        pending_scale_down=None
        if pending is None
        else PendingStatus(
            since=datetime.fromtimestamp(pending.since, UTC), parallelism=pending.parallelism
        ),
        last_rescale_time=None
        if obs.last_rescale_at is None
        else datetime.fromtimestamp(obs.last_rescale_at, UTC),
        history=history[-HISTORY:],
    )
    return merge_patch(updated)


def merge_patch(status: AutoscalerStatus) -> dict[str, Any]:
    """The status as a merge patch: unset fields as nulls (which remove what was there), the
    history's entries without them (a list is replaced whole, nulls and all)."""
    patch = status.model_dump(by_alias=True, mode="json", exclude={"history"})
    patch["history"] = [entry.wire() for entry in status.history]
    return patch


def waiting_patch(
    previous: AutoscalerStatus | None, reason: str, keep_pending: bool
) -> dict[str, Any]:
    """`status.autoscaler` while no decision can be made: the last recommendation stays, and
    the scale-down pending too where the load it saw still runs (`keep_pending`: the window
    refills after an operator restart), not after a migration or a lost instance."""
    kept = previous if previous is not None else AutoscalerStatus()
    update: dict[str, Any] = {"action": Action.HOLD.value, "reason": reason}
    if not keep_pending:
        update["pending_scale_down"] = None
    return merge_patch(kept.model_copy(update=update))


RELIEVING = Protocol.MOVING_STATE
"""The protocol of a scale-up that relieves instances behind their input (`protocol_of`)."""


def protocol_of(spec: AutoscalerSpec, decision: Decision, plan: Plan | None) -> tuple[str, str]:
    """The protocol of the Migration for `decision`, and why when the autoscaler chose it (else
    empty). `auto` leaves the choice to the operator (`capability.choose`: UniMiCo for a move,
    as its origin runs on only for its windows' extent: seed 000, 3.2), except for a scale-up of
    instances behind their input (`Decision.behind`): there UniMiCo's origin, saturated, runs on
    alone through its whole backlog to its window's end while the lag grows, and moving-state
    hands that backlog to the new instances at once; where moving-state can carry the plan."""
    if spec.protocol is not Protocol.AUTO or not decision.behind or plan is None:
        return spec.protocol.value, ""
    if capability.refusal(RELIEVING.value, plan) is not None:
        return spec.protocol.value, ""
    why = (
        f"{RELIEVING.value}: the instances are behind their input, and it hands the backlog to "
        "the new instances at once (UniMiCo's saturated origin would work through it alone)"
    )
    return RELIEVING.value, why


def migration_body(
    query: dict[str, Any],
    epoch: int,
    decision: Decision,
    spec: AutoscalerSpec,
    taken: Collection[str] = (),
    plan: Plan | None = None,
) -> dict[str, Any]:
    """The Migration that rescales `query` (its API object) as `decision` says, named apart
    from the Migrations `taken`; `plan` is the query's (for `protocol_of`)."""
    name = query["metadata"]["name"]
    protocol, chosen = protocol_of(spec, decision, plan)
    reason = f"{decision.reason}; {chosen}" if chosen else decision.reason
    return {
        "apiVersion": API_VERSION,
        "kind": "Migration",
        "metadata": {
            "name": migration_name(name, epoch, decision.parallelism, taken),
            "labels": {"streamshift.io/query": name, CAUSE_LABEL: "autoscaler"},
            "annotations": {REASON_ANNOTATION: reason},
            "ownerReferences": [
                {
                    "apiVersion": query["apiVersion"],
                    "kind": query["kind"],
                    "name": name,
                    "uid": query["metadata"]["uid"],
                }
            ],
        },
        "spec": {
            "queryRef": {"name": name},
            "protocol": protocol,
            "target": {"parallelism": decision.parallelism},
            "verify": True,
        },
    }
