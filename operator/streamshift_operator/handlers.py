"""The kopf handlers: register, delegate, map outcomes to kopf's retry semantics.

Run with `kopf run --standalone -m streamshift_operator.handlers` (all namespaces: `-A`). A
StreamQuery is reconciled on create, resume and spec update, and every 2 s by a timer that
observes its pods and workers; a Migration is driven by a 0.5 s timer until it is terminal (a
hand-off waits on worker progress: a tick late is that much longer migration). Kopf's
own bookkeeping goes to annotations (the CRDs' structural schemas would prune it from status).
"""

import logging
from typing import Any

import kopf

from streamshift_operator import act, migrate, query
from streamshift_operator.context import Context
from streamshift_operator.kube import MIGRATIONS, STREAM_QUERIES
from streamshift_operator.models.common import GROUP, VERSION
from streamshift_operator.models.migration import TERMINAL
from streamshift_operator.models.streamquery import RetentionPolicy, StreamQuerySpec
from streamshift_operator.pods import QueryIdentity
from streamshift_operator.specdiff import DiffType, classify

SQ = (GROUP, VERSION, STREAM_QUERIES)
MIG = (GROUP, VERSION, MIGRATIONS)
PREFIX = "streamshift.io"
MIGRATION_TICK_S = 0.5


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.peering.standalone = True
    settings.posting.level = logging.WARNING
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=PREFIX, key="last-handled-configuration"
    )
    memo["ctx"] = Context.start()


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In a pod: the service account; elsewhere: $KUBECONFIG, read when the operator starts."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.cleanup()
async def close(memo: Any, **_: Any) -> None:
    await _ctx(memo).session.close()


def _ctx(memo: Any) -> Context:
    ctx: Context = memo["ctx"]
    return ctx


def _namespace(namespace: str | None) -> str:
    if namespace is None:
        raise kopf.PermanentError("streamshift resources are namespaced")
    return namespace


async def _reconcile(memo: Any, namespace: str | None, name: str, diff: DiffType) -> None:
    try:
        fresh = await query.reconcile(_ctx(memo), _namespace(namespace), name, diff)
    except query.Problem as problem:
        if problem.permanent:
            raise kopf.PermanentError(problem.message) from None
        raise kopf.TemporaryError(problem.message, delay=10) from None
    if not fresh:
        raise kopf.TemporaryError("the StreamQuery changed meanwhile: observe again", delay=1)


@kopf.on.resume(*SQ)
@kopf.on.create(*SQ)
async def query_created(memo: Any, namespace: str | None, name: str, **_: Any) -> None:
    await _reconcile(memo, namespace, name, DiffType.IGNORE)


@kopf.on.update(*SQ, field="spec")
async def query_changed(
    memo: Any, namespace: str | None, name: str, old: Any, new: Any, **_: Any
) -> None:
    diff = classify(StreamQuerySpec.model_validate(old), StreamQuerySpec.model_validate(new))
    await _reconcile(memo, namespace, name, diff.type)


@kopf.timer(*SQ, interval=2.0, initial_delay=1.0, backoff=2.0)
async def query_observed(memo: Any, namespace: str | None, name: str, **_: Any) -> None:
    try:
        await query.reconcile(_ctx(memo), _namespace(namespace), name, DiffType.IGNORE)
    except query.Problem:
        return  # recorded in status and as an Event


def _deletes_snapshots(spec: Any, **_: Any) -> bool:
    """Only such queries get kopf's finalizer: the others need no operator to be deleted."""
    retention = (spec.get("snapshot") or {}).get("retention") or {}
    return bool(retention.get("onDelete") == RetentionPolicy.DELETE.value)


@kopf.on.delete(*SQ, retries=30, when=_deletes_snapshots)
async def query_deleted(
    memo: Any, spec: Any, namespace: str | None, name: str, uid: str, logger: Any, **_: Any
) -> None:
    """Children go with the owner references; under retention policy Delete the workers are
    stopped first (each writes a last snapshot), then every snapshot object is removed."""
    model = StreamQuerySpec.model_validate(dict(spec))
    query = QueryIdentity(name, _namespace(namespace), uid)
    if not await act.stop_workers(_ctx(memo).kube, query):
        raise kopf.TemporaryError(
            "waiting for the workers to stop before removing snapshots", delay=2
        )
    removed = await act.remove_snapshots(_ctx(memo).kube, query, model)
    if removed is None:
        raise kopf.PermanentError("snapshot credentials are gone: the snapshots are kept")
    logger.info(f"removed {removed} snapshot objects")


@kopf.timer(
    *MIG,
    interval=MIGRATION_TICK_S,
    backoff=MIGRATION_TICK_S,
    when=lambda status, **_: status.get("phase") not in {p.value for p in TERMINAL},
)
async def migration_tick(memo: Any, namespace: str | None, name: str, **_: Any) -> None:
    await migrate.tick(_ctx(memo), _namespace(namespace), name)
