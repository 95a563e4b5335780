"""The kopf handlers: register, delegate, map outcomes to kopf's retry semantics.

Run with `kopf run --standalone -m streamshift_operator.handlers` (all namespaces: `-A`). A
StreamQuery is reconciled on create, resume and spec update, and every 2 s by a tick that
observes its pods and workers; a Migration is driven by a 0.5 s tick until it is terminal (a
hand-off waits on worker progress: a tick late is that much longer migration), and at once
after a tick that entered a new phase. The ticks run in
a `Ticker` fed by watch events, not in kopf timers: those would put kopf's finalizer on every
object. Only a query whose snapshots go with it (retention `Delete`) gets the finalizer, from its
delete handler; the others, and every Migration, are deleted without the operator. Kopf's
own bookkeeping goes to annotations (the CRDs' structural schemas would prune it from status).
"""

import logging
from typing import Any

import kopf

from streamshift_operator import logs, metrics
from streamshift_operator.clients import events
from streamshift_operator.clients.kube import MIGRATIONS, STREAM_QUERIES
from streamshift_operator.context import Context
from streamshift_operator.migration.reconciler import tick
from streamshift_operator.models.common import GROUP, VERSION
from streamshift_operator.models.migration import TERMINAL
from streamshift_operator.models.streamquery import RetentionPolicy, StreamQuerySpec
from streamshift_operator.resources.pods import QueryIdentity
from streamshift_operator.streamquery import act, deletion, stranded
from streamshift_operator.streamquery.reconciler import Problem, reconcile
from streamshift_operator.streamquery.spec_diff import DiffType, classify
from streamshift_operator.ticker import Ticker

SQ = (GROUP, VERSION, STREAM_QUERIES)
MIG = (GROUP, VERSION, MIGRATIONS)
PREFIX = "streamshift.io"
QUERY_TICK_S = 2.0
MIGRATION_TICK_S = 0.5


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    logs.structured()
    settings.peering.standalone = True
    settings.posting.level = logging.WARNING
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=PREFIX, key="last-handled-configuration"
    )
    metrics.serve()
    memo["ctx"] = Context.start()
    memo["ticker"] = Ticker()
    ctx = memo["ctx"]  # queries whose deletion no handler will finish (`stranded`)
    memo["ticker"].start("stranded", lambda: stranded.sweep(ctx), stranded.SWEEP_S)


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In a pod: the service account; elsewhere: $KUBECONFIG, read when the operator starts."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.cleanup()
async def close(memo: Any, **_: Any) -> None:
    await _ticker(memo).close()
    await _ctx(memo).session.close()


def _ctx(memo: Any) -> Context:
    ctx: Context = memo["ctx"]
    return ctx


def _ticker(memo: Any) -> Ticker:
    ticker: Ticker = memo["ticker"]
    return ticker


def _gone(event: Any, meta: Any) -> bool:
    """Deleted, or being deleted (then only its delete handler has work left)."""
    return bool(event.get("type") == "DELETED" or meta.get("deletionTimestamp"))


def _namespace(namespace: str | None) -> str:
    if namespace is None:
        raise kopf.PermanentError("streamshift resources are namespaced")
    return namespace


async def _reconcile(memo: Any, namespace: str | None, name: str, diff: DiffType) -> None:
    try:
        fresh = await reconcile(_ctx(memo), _namespace(namespace), name, diff)
    except Problem as problem:
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


@kopf.on.event(*SQ)
async def query_seen(
    memo: Any, event: Any, meta: Any, namespace: str | None, name: str, uid: str, **_: Any
) -> None:
    """Observe the query every 2 s while it exists."""
    key = f"{STREAM_QUERIES}/{uid}"
    if _gone(event, meta):
        _ticker(memo).stop(key)
        metrics.forget_query(_namespace(namespace), name)
        return
    ctx, ns = _ctx(memo), _namespace(namespace)

    async def observe() -> None:
        try:
            await reconcile(ctx, ns, name, DiffType.IGNORE)
        except Problem:
            return  # recorded in status and as an Event

    _ticker(memo).start(key, observe, QUERY_TICK_S, initial_delay=1.0)


def _deletes_snapshots(spec: Any, **_: Any) -> bool:
    """Only such queries get kopf's finalizer (this filter on the one handler that needs it):
    the others need no operator to be deleted."""
    retention = (spec.get("snapshot") or {}).get("retention") or {}
    return bool(retention.get("onDelete") == RetentionPolicy.DELETE.value)


@kopf.on.delete(*SQ, retries=30, when=_deletes_snapshots)
async def query_deleted(
    memo: Any,
    body: Any,
    spec: Any,
    namespace: str | None,
    name: str,
    uid: str,
    runtime: Any,
    logger: Any,
    **_: Any,
) -> None:
    """Children go with the owner references; under retention policy Delete the workers are
    stopped first (each writes a last snapshot), then every snapshot object is removed: tried
    for `deletion.GIVE_UP_S`, then the finalizer lets go with an Event saying what stays."""
    model = StreamQuerySpec.model_validate(dict(spec))
    query = QueryIdentity(name, _namespace(namespace), uid)
    if not await act.stop_workers(_ctx(memo).kube, query):
        raise kopf.TemporaryError(
            "waiting for the workers to stop before removing snapshots", delay=2
        )
    where = deletion.location(model, query.namespace, name)
    try:
        removed = await act.remove_snapshots(_ctx(memo).kube, query, model)
    except deletion.StoreUnreachable as error:
        verdict = deletion.after_failure(runtime.total_seconds(), str(error), where)
        if verdict.retry:
            raise kopf.TemporaryError(verdict.message, delay=deletion.RETRY_S) from None
        events.warning(dict(body), "SnapshotsLeftBehind", verdict.message)
        return
    if removed is None:
        gone = deletion.left_behind(where, "the snapshot credentials (Secrets) are gone")
        events.warning(dict(body), "SnapshotsLeftBehind", gone)
        return
    logger.info(f"removed {removed} snapshot objects")


@kopf.on.event(*MIG)
async def migration_seen(
    memo: Any,
    event: Any,
    meta: Any,
    status: Any,
    namespace: str | None,
    name: str,
    uid: str,
    **_: Any,
) -> None:
    """Drive the migration every 0.5 s (at once after a phase change) until it is terminal or
    deleted."""
    key = f"{MIGRATIONS}/{uid}"
    if _gone(event, meta) or status.get("phase") in {p.value for p in TERMINAL}:
        _ticker(memo).stop(key)
        return
    ctx, ns = _ctx(memo), _namespace(namespace)

    async def drive() -> bool:
        return await tick(ctx, ns, name)

    _ticker(memo).start(key, drive, MIGRATION_TICK_S)
