"""StreamQuery actions: make the children exist; on deletion stop the workers, then remove
the snapshots they wrote.

Each function is idempotent (create-if-missing, delete-if-present), so a handler that failed
half-way simply runs again. Blocking clients (Kafka admin, MinIO) run in a thread.
"""

import asyncio
from typing import Any

from streamshift_operator.clients.kafka_topics import ensure_topics
from streamshift_operator.clients.kube import Kube
from streamshift_operator.models.streamquery import StreamQuerySpec, StreamQueryStatus
from streamshift_operator.resources.names import selector_labels
from streamshift_operator.resources.pods import QueryIdentity, build_pod
from streamshift_operator.streamquery import deletion
from streamshift_operator.streamquery.children import build_configmap, build_service


async def topics(spec: StreamQuerySpec) -> list[str]:
    """Create the missing source and sink topics; the names created."""
    wanted = [(s.topic, s.partitions) for s in spec.sources]
    wanted += [(s.topic, s.partitions) for s in spec.sinks]
    return await asyncio.to_thread(ensure_topics, spec.kafka.bootstrap_servers, wanted)


async def plan_config(kube: Kube, query: QueryIdentity, plan: dict[str, Any]) -> None:
    await kube.ensure(build_configmap(query, plan))


async def deploy(
    kube: Kube,
    query: QueryIdentity,
    spec: StreamQuerySpec,
    status: StreamQueryStatus,
    instances: list[int],
    image: str,
) -> list[str]:
    """Create the Service, the plan's ConfigMap and the pods of `instances`; the pods created."""
    if status.plan is None:
        raise ValueError("a query is deployed only once its placement is recorded")
    plan = status.plan.wire()
    await kube.ensure(build_service(query))
    await plan_config(kube, query, plan)
    created = []
    for instance in status.instances:
        if instance.id not in instances:
            continue
        pod = build_pod(query, spec, plan, status.epoch, instance.id, instance.partitions, image)
        if await kube.ensure(pod):
            created.append(pod["metadata"]["name"])
    return created


async def stop_workers(kube: Kube, query: QueryIdentity) -> bool:
    """Delete the query's worker pods (they write a last snapshot); True once none is left."""
    pods = await kube.pods(query.namespace, selector_labels(query.name))
    for pod in pods:
        await kube.delete_pod(query.namespace, pod.metadata.name)
    return not pods


async def remove_snapshots(kube: Kube, query: QueryIdentity, spec: StreamQuerySpec) -> int | None:
    """Delete the query's snapshot objects; None when the credentials cannot be read,
    `deletion.StoreUnreachable` when the store does not answer (in `deletion.TIMEOUT_S`)."""
    creds = spec.snapshot.credentials
    access = await kube.secret_value(query.namespace, creds.access_key.name, creds.access_key.key)
    secret = await kube.secret_value(query.namespace, creds.secret_key.name, creds.secret_key.key)
    if access is None or secret is None:
        return None
    prefix = f"{query.namespace}/{query.name}/"
    return await asyncio.to_thread(
        deletion.remove, spec.snapshot.endpoint, access, secret, spec.snapshot.bucket, prefix
    )
