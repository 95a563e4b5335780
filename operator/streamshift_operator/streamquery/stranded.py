"""Queries stranded in deletion: being deleted, kopf's finalizer still on them, and no handler
that will ever run for them. The operator sweeps for them at startup and every `SWEEP_S`.

Kopf does not watch a namespace whose deletion was pending when it started (its namespace
observer adds no namespace being deleted), so a namespace deleted while the operator was down
stayed Terminating when it came back: its query's delete handler never ran, and the finalizer
was never removed. A query is stranded when its namespace is being deleted, or when it has been
being deleted for more than `STRANDED_S` (longer than the delete handler's bounded retries,
`deletion`, so a query whose handler runs is left to it). The sweep does what the handler
would (stop the workers, one attempt at removing the snapshots) and removes kopf's finalizer,
saying what was left behind in the log and, where the namespace still takes one, an Event.

An operator serving listed namespaces (the chart's `watchNamespaces`) has a Role in each, which
the namespace's deletion removes before the query lets go of its finalizer; so its ClusterRole
also lists and patches StreamQueries, and the sweep touches only those of its own namespaces.
"""

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from streamshift_operator.clients.kube import STREAM_QUERIES
from streamshift_operator.context import Context
from streamshift_operator.models.common import GROUP, VERSION
from streamshift_operator.models.streamquery import RetentionPolicy, StreamQuerySpec
from streamshift_operator.resources.pods import QueryIdentity
from streamshift_operator.streamquery import act, deletion

KOPF_FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
SWEEP_S = 30.0
STRANDED_S = 90.0  # the delete handler's retries (`deletion.GIVE_UP_S`) end well before

log = logging.getLogger("streamshift.operator")


def stranded(body: dict[str, Any], terminating: set[str], now: datetime) -> bool:
    """Whether the query is being deleted with kopf's finalizer on it and no handler to come."""
    meta = body["metadata"]
    since = meta.get("deletionTimestamp")
    if since is None or KOPF_FINALIZER not in (meta.get("finalizers") or []):
        return False
    if meta["namespace"] in terminating:
        return True
    began = datetime.fromisoformat(since.replace("Z", "+00:00"))
    return (now - began).total_seconds() > STRANDED_S


async def sweep(ctx: Context) -> None:
    """Finish the deletion of every stranded query in the namespaces the operator serves."""
    try:
        found = await asyncio.to_thread(
            ctx.kube.custom.list_cluster_custom_object, GROUP, VERSION, STREAM_QUERIES
        )
    except ApiException as error:
        log.warning("stranded deletions not swept: cannot list StreamQueries", exc_info=error)
        return
    deleting = [
        q
        for q in found["items"]
        if q["metadata"].get("deletionTimestamp")
        and (not ctx.served or q["metadata"]["namespace"] in ctx.served)
    ]
    terminating = {
        ns for ns in {q["metadata"]["namespace"] for q in deleting} if await _ending(ctx, ns)
    }
    now = datetime.now(UTC)
    for body in deleting:
        if stranded(body, terminating, now):
            await finish(ctx, body)


async def _ending(ctx: Context, namespace: str) -> bool:
    try:
        found = await asyncio.to_thread(ctx.kube.core.read_namespace, namespace)
    except ApiException:
        return False  # not readable here: only the age counts
    return bool(found.status is not None and found.status.phase == "Terminating")


async def finish(ctx: Context, body: dict[str, Any]) -> None:
    """Stop the workers, try once to remove the snapshots (retention `Delete`), remove kopf's
    finalizer (with the resourceVersion read: a handler that finished meanwhile wins)."""
    meta = body["metadata"]
    query = QueryIdentity(meta["name"], meta["namespace"], meta["uid"])
    spec = StreamQuerySpec.model_validate(body["spec"])
    try:
        await act.stop_workers(ctx.kube, query)
    except ApiException as error:
        if error.status != 403:
            raise  # refused: the namespace's Role went with its deletion, and so do the pods
    said = f"StreamQuery {query.namespace}/{query.name} deleted while no handler ran"
    if spec.snapshot.retention.on_delete is RetentionPolicy.DELETE:
        why = await _remove(ctx, query, spec)
        if why is not None:
            message = deletion.left_behind(
                deletion.location(spec, query.namespace, query.name), why
            )
            log.warning(f"{said}: {message}")
            await _warning(ctx, body, "SnapshotsLeftBehind", message)
    finalizers = [f for f in meta.get("finalizers") or [] if f != KOPF_FINALIZER]
    patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
    try:
        await asyncio.to_thread(
            ctx.kube.custom.patch_namespaced_custom_object,
            GROUP,
            VERSION,
            query.namespace,
            STREAM_QUERIES,
            query.name,
            patch,
        )
    except ApiException as error:
        if error.status not in (404, 409):
            raise
        return
    log.info(f"{said}: its finalizer removed", extra={"namespace": query.namespace})


async def _warning(ctx: Context, body: dict[str, Any], reason: str, message: str) -> None:
    """A Warning Event on the query, written directly: the sweep runs outside kopf's handlers,
    whose event queue `events` posts through. A namespace being deleted takes none (logged)."""
    meta = body["metadata"]
    now = datetime.now(UTC)
    event = {
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": body["apiVersion"],
            "kind": body["kind"],
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        },
        "type": "Warning",
        "reason": reason,
        "message": message,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "source": {"component": "streamshift-operator"},
    }
    try:
        await asyncio.to_thread(ctx.kube.core.create_namespaced_event, meta["namespace"], event)
    except ApiException as error:
        log.info(f"no Event in namespace {meta['namespace']}: {error.reason}")


async def _remove(ctx: Context, query: QueryIdentity, spec: StreamQuerySpec) -> str | None:
    """One attempt at removing the snapshots; why they stay, or None when they are gone."""
    creds = spec.snapshot.credentials
    try:
        access = await ctx.kube.secret_value(
            query.namespace, creds.access_key.name, creds.access_key.key
        )
        secret = await ctx.kube.secret_value(
            query.namespace, creds.secret_key.name, creds.secret_key.key
        )
    except ApiException as error:
        if error.status != 403:
            raise
        return "the snapshot credentials can no longer be read (the namespace's Role is gone)"
    if access is None or secret is None:
        return "the snapshot credentials (Secrets) are gone"
    prefix = f"{query.namespace}/{query.name}/"
    try:
        await asyncio.to_thread(
            deletion.remove, spec.snapshot.endpoint, access, secret, spec.snapshot.bucket, prefix
        )
    except deletion.StoreUnreachable as error:
        return str(error)
    return None
