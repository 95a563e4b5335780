"""Admission of a Queued Migration, and the query's mark of its active migration.

A Migration leaves Queued when its query exists and is placed, no other migration of the query
is active, `admission_rule.admitted` picks it, its target resolves (or the refusal fails it; `auto`
chooses with the state size the moving instances' workers report), and the query's
`status.activeMigration` names it: written with the resourceVersion read, so two migrations
never both win. A terminal migration clears the mark if it still names it. A Migration of a
query being deleted fails at once: it would start pods that only hold up the deletion.
"""

from datetime import datetime
from typing import Any

from streamshift_operator.clients.kube import MIGRATIONS, STREAM_QUERIES
from streamshift_operator.context import Context
from streamshift_operator.migration.admission_rule import Candidate, admitted
from streamshift_operator.migration.phase_machine import Observation
from streamshift_operator.migration.state_size import observed_state_bytes
from streamshift_operator.migration.target import Refused, resolve
from streamshift_operator.models.migration import MigrationSpec, MigrationStatus, Phase, Protocol
from streamshift_operator.models.streamquery import StreamQuerySpec, StreamQueryStatus


async def queued(
    ctx: Context,
    name: str,
    spec: MigrationSpec,
    status: MigrationStatus,
    query: dict[str, Any] | None,
    now: datetime,
) -> Observation:
    namespace = None if query is None else query["metadata"]["namespace"]
    if query is None or namespace is None:
        return Observation(
            now=now,
            failure=f"StreamQuery {spec.query_ref.name!r} not found: create it or fix "
            "spec.queryRef.name (a Migration of a deleted query cannot run)",
        )
    if query["metadata"].get("deletionTimestamp"):
        return Observation(now=now, failure=f"StreamQuery {spec.query_ref.name!r} is being deleted")
    migrations = await ctx.kube.list(MIGRATIONS, namespace)
    candidates = [
        Candidate(
            m["metadata"]["name"],
            datetime.fromisoformat(m["metadata"]["creationTimestamp"]),
            Phase((m.get("status") or {}).get("phase", Phase.QUEUED)),
        )
        for m in migrations
        if m["spec"]["queryRef"]["name"] == spec.query_ref.name
    ]
    placed = StreamQueryStatus.model_validate(query.get("status") or {})
    busy = placed.active_migration not in (None, name)
    if busy or admitted(candidates) != name or not placed.instances:
        return Observation(now=now)
    auto = spec.protocol is Protocol.AUTO
    state = await observed_state_bytes(ctx, query, spec, placed) if auto else 0
    try:
        resolved = resolve(spec, StreamQuerySpec.model_validate(query["spec"]), placed, state)
    except Refused as refused:
        return Observation(now=now, failure=str(refused))
    mark = {"activeMigration": name, "phase": "Migrating"}
    rv = query["metadata"]["resourceVersion"]
    if not await ctx.kube.patch_status(STREAM_QUERIES, namespace, spec.query_ref.name, mark, rv):
        return Observation(now=now)
    status.protocol, status.protocol_reason = resolved.protocol, resolved.reason
    if auto:
        status.protocol_reason = f"{resolved.reason} (observed state: {state} bytes)"
    status.origin_epoch, status.target_epoch = placed.epoch, placed.epoch + 1
    status.target_instances = resolved.instances
    return Observation(now=now, admitted=True)


async def release(ctx: Context, query: dict[str, Any], name: str) -> None:
    meta = query["metadata"]
    if (query.get("status") or {}).get("activeMigration") == name:
        await ctx.kube.patch_status(
            STREAM_QUERIES, meta["namespace"], meta["name"], {"activeMigration": None}
        )
