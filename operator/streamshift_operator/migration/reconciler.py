"""Migration reconciliation, one tick: observe → decide (machine.transition) → act → record.

The phase machine's state is the Migration's status, read afresh every tick and written with
the resourceVersion it was read at, so a restarted operator (or a tick that lost a race) resumes
exactly where the status stands. Admission marks the query's `status.activeMigration`; the
hand-over (`hand_over`) writes the target placement into the query's status (and its parallelism
and plan into the spec, as `kubectl scale` would); a terminal phase clears the mark and records
the migration as the query's `status.lastMigration`.

Finalizing records the cost first, then (with spec.verify) verifies the output, so the protocol's
duration and gap never include the verification; its own duration is `cost.verificationSeconds`.
The conditions (Progressing, Ready, Verified) follow the status on every write, and a
verification that is not exact is a Warning Event. Every tick looks at the pods the phase needs
(`lost_pods`): one lost fails the step at once, naming the pod, instead of at the phase's
timeout. A query deleted, or being deleted, abandons its migration (Failed at once).
"""

import time
from datetime import UTC, datetime
from typing import Any

from streamshift_operator import metrics
from streamshift_operator.clients import events
from streamshift_operator.clients.control_api import ControlError
from streamshift_operator.clients.kube import MIGRATIONS, STREAM_QUERIES
from streamshift_operator.context import Context
from streamshift_operator.migration import admission, output_gap
from streamshift_operator.migration.hand_over import hand_over
from streamshift_operator.migration.lost_pods import lost_pod
from streamshift_operator.migration.phase_machine import (
    Action,
    MachineState,
    Observation,
    actions_of,
    transition,
)
from streamshift_operator.migration.phase_steps import perform
from streamshift_operator.migration.run import Run
from streamshift_operator.migration.status import migration_conditions, status_patch
from streamshift_operator.migration.verification import verify_in_background
from streamshift_operator.models.common import Condition
from streamshift_operator.models.migration import (
    TERMINAL,
    MigrationSpec,
    MigrationStatus,
    Phase,
    PhaseRecord,
)
from streamshift_operator.models.streamquery import (
    LastMigration,
    StreamQuerySpec,
    StreamQueryStatus,
)
from streamshift_operator.resources.pods import QueryIdentity
from streamshift_operator.streamquery.observe import observe

CALLER_ACTIONS = frozenset({Action.HAND_OVER, Action.RECORD_COST, Action.VERIFY_OUTPUT})


async def tick(ctx: Context, namespace: str, name: str) -> bool:
    """One tick; True when the migration entered another phase (whose step is due at once)."""
    body = await ctx.kube.get(MIGRATIONS, namespace, name)
    if body is None:
        return False
    spec = MigrationSpec.model_validate(body["spec"])
    status = MigrationStatus.model_validate(body.get("status") or {})
    if status.phase in TERMINAL:
        return False
    as_read = status.model_copy(deep=True)
    now = datetime.now(UTC)
    if not status.phase_history:
        status.phase_history.append(PhaseRecord(phase=status.phase, entered_at=now))
    query = await ctx.kube.get(STREAM_QUERIES, namespace, spec.query_ref.name)
    if status.phase is Phase.QUEUED:
        obs = await admission.queued(ctx, name, spec, status, query, now)
    else:
        obs = await _step(ctx, name, spec, status, query, now)
    state = MachineState(
        status.phase, status.phase_history[-1].entered_at, status.protocol, spec.verify
    )
    decision = transition(state, obs, spec.timeouts)
    moved = decision.phase is not status.phase
    if moved:
        recorded = datetime.now(UTC)  # after this tick's work (a verification takes a while)
        status.phase_history.append(
            PhaseRecord(phase=decision.phase, entered_at=recorded, message=decision.message)
        )
        say = (
            events.warning
            if decision.phase in (Phase.ROLLING_BACK, Phase.FAILED)
            else events.normal
        )
        say(body, decision.phase.value, decision.message or f"entered {decision.phase}")
    if obs.note is not None:
        events.warning(body, "PodCreatedAgain", obs.note)
    status.phase = decision.phase
    status.message = decision.message
    check = status.verification
    if decision.phase is Phase.SUCCEEDED and check is not None and not check.exact:
        status.message = f"the hand-off succeeded but the output is not exact: {check.message}"
    status.observed_generation = body["metadata"]["generation"]
    status.conditions = [
        Condition.model_validate(c)
        for c in migration_conditions(status, spec.verify, datetime.now(UTC))  # after the work
    ]
    if status == as_read:
        return False  # nothing new: no write, no watch event
    version = body["metadata"]["resourceVersion"]
    patch = status_patch(status, as_read)
    if not await ctx.kube.patch_status(MIGRATIONS, namespace, name, patch, version):
        return False
    if status.verification is not None and as_read.verification is None:
        check = status.verification
        say = events.normal if check.exact else events.warning
        say(body, "Verified" if check.exact else "NotExact", check.message or str(check.exact))
    if moved and decision.phase in TERMINAL:
        began = status.phase_history[0].entered_at
        protocol = (status.protocol or spec.protocol).value
        seconds = (status.phase_history[-1].entered_at - began).total_seconds()
        metrics.record_migration_end(namespace, protocol, decision.phase.value, seconds)
    if decision.phase in TERMINAL and query is not None:
        await _record_on_query(ctx, query, name, status)
        await admission.release(ctx, query, name)
    return moved and decision.phase not in TERMINAL


async def _record_on_query(
    ctx: Context, query: dict[str, Any], name: str, status: MigrationStatus
) -> None:
    """The query's `status.lastMigration`: this migration, how it ended, whether verified."""
    last = LastMigration(
        name=name,
        phase=status.phase.value,
        protocol=None if status.protocol is None else status.protocol.value,
        verified=None if status.verification is None else status.verification.exact,
        finished_at=datetime.now(UTC),
    )
    meta = query["metadata"]
    patch = {"lastMigration": {"verified": None, **last.wire()}}
    await ctx.kube.patch_status(STREAM_QUERIES, meta["namespace"], meta["name"], patch)


async def _step(
    ctx: Context,
    name: str,
    spec: MigrationSpec,
    status: MigrationStatus,
    query: dict[str, Any] | None,
    now: datetime,
) -> Observation:
    if query is None:
        return Observation(now=now, abandoned=f"StreamQuery {spec.query_ref.name!r} was deleted")
    if query["metadata"].get("deletionTimestamp"):
        return Observation(
            now=now, abandoned=f"StreamQuery {spec.query_ref.name!r} is being deleted"
        )
    qspec = StreamQuerySpec.model_validate(query["spec"])
    placed = StreamQueryStatus.model_validate(query.get("status") or {})
    meta = query["metadata"]
    identity = QueryIdentity(meta["name"], meta["namespace"], meta["uid"])
    token = await ctx.kube.secret_value(
        identity.namespace, qspec.control_token.name, qspec.control_token.key
    )
    if token is None:
        return Observation(now=now, failure="the query's control-token Secret is gone")
    control = ctx.control(token)
    view = await observe(ctx.kube, control, identity.namespace, identity.name)
    plan = (spec.target.plan or placed.plan or qspec.plan).wire()
    run = Run(ctx, control, name, identity, qspec, placed, status, view, plan)
    taken = status.cost.state_bytes_moved is not None
    origin, targets = [p for p, _ in run.origin()], [p for p, _ in run.targets()]
    lost = lost_pod(status.phase, status.protocol, taken, origin, targets, view.pods, now)
    if lost is not None:
        return Observation(now=now, failure=lost)
    actions = actions_of(status.phase, status.protocol, spec.verify)
    try:
        done = await perform(run, tuple(a for a in actions if a not in CALLER_ACTIONS))
    except ControlError as error:
        if error.status is None:
            return Observation(now=now)
        return Observation(now=now, failure=str(error))
    if "state_bytes" in run.learned:
        status.cost.state_bytes_moved = run.learned["state_bytes"]
        status.cost.events_processed_twice = run.learned["twice"]
    if done and Action.HAND_OVER in actions:
        done = await hand_over(ctx, query, spec, status)
    recorded = status.cost.duration_seconds is not None
    if done and Action.RECORD_COST in actions and not recorded:
        done = await output_gap.record(run, status, now)
    if done and Action.VERIFY_OUTPUT in actions and status.verification is None:
        done = await _verify(run, status)
    return Observation(now=now, done=done, note="; ".join(run.notes) or None)


async def _verify(run: Run, status: MigrationStatus) -> bool:
    """Once every target reports a watermark, compare the output with the reference run:
    `verify` waits for the windows open up to that watermark (the hand-off is behind it) to
    close in the committed output."""
    marks = [run.view.reports[pod].watermark for pod, _ in run.targets() if pod in run.view.reports]
    if len(marks) < len(status.target_instances) or None in marks:
        return False
    touched_to = max(mark for mark in marks if mark is not None)
    began = time.monotonic()
    status.verification = await verify_in_background(run.spec, run.plan, run.query, touched_to)
    seconds = round(time.monotonic() - began, 3)
    status.cost = status.cost.model_copy(update={"verification_seconds": seconds})
    return True
