"""StreamQuery reconciliation, one level-based pass: observe → validate → reconcile → record,
then the autoscaler's step (`autoscaler.reconcile`) on what the pass observed.

Create, resume and update handlers and the observation timer all run `reconcile`, so a missed
event, a deleted pod or an operator restart converge on the next pass. Each pass reads the object
afresh and writes its status with the resourceVersion it read, so a pass never overwrites a
placement a Migration's hand-over wrote meanwhile. Every pass records the query's dependencies
(`dependencies`) as conditions, a failing one as Degraded with a Warning Event; before the first
placement Kafka must answer with topics that fit the spec, recorded like an invalid spec.
"""

from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from streamshift_operator.autoscaler.reconcile import autoscale
from streamshift_operator.clients import events
from streamshift_operator.clients.kafka_topics import TopicError
from streamshift_operator.clients.kube import MIGRATIONS, STREAM_QUERIES
from streamshift_operator.context import Context
from streamshift_operator.models.common import SecretKeyRef
from streamshift_operator.models.streamquery import StreamQuerySpec, StreamQueryStatus
from streamshift_operator.resources.names import selector
from streamshift_operator.resources.pods import QueryIdentity
from streamshift_operator.streamquery import act, dependencies, status
from streamshift_operator.streamquery.decide import follow_ups, initial_status, missing_pods
from streamshift_operator.streamquery.dependencies import Finding
from streamshift_operator.streamquery.observe import QueryView, observe
from streamshift_operator.streamquery.plan_check import check_plan
from streamshift_operator.streamquery.spec_diff import DiffType

CHECKS = dependencies.Checks()  # each query's Kafka and S3, looked at every 10 s at most


class Problem(Exception):
    """Why the query cannot run; `permanent` when only a spec change can fix it."""

    def __init__(self, reason: str, message: str, permanent: bool) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.permanent = permanent


async def reconcile(ctx: Context, namespace: str, name: str, diff: DiffType) -> bool:
    """One pass; False when the status write lost a race (run again). Raises `Problem`."""
    body = await ctx.kube.get(STREAM_QUERIES, namespace, name)
    if body is None or body["metadata"].get("deletionTimestamp"):
        return True
    now = datetime.now(UTC)
    previous = body.get("status", {})
    current = StreamQueryStatus.model_validate(previous)
    uid = body["metadata"]["uid"]
    findings: list[Finding] = []
    try:
        spec, token, access, secret = await _validate(ctx, namespace, body["spec"])
        placed_already = bool(current.instances)
        findings = await CHECKS.findings(uid, spec, placed_already, access, secret)
        if not placed_already:
            _kafka_ready(findings)
            await _topics(spec)
    except Problem as problem:
        if previous.get("message") != problem.message:
            events.warning(body, problem.reason, problem.message)
        patch = status.degraded(
            previous.get("conditions", []), now, problem.reason, problem.message, findings
        )
        await ctx.kube.patch_status(STREAM_QUERIES, namespace, name, patch)
        raise
    query = QueryIdentity(name, namespace, uid)
    if not current.instances:
        placed = initial_status(spec)
        current = current.model_copy(
            update={"epoch": placed.epoch, "plan": placed.plan, "instances": placed.instances}
        )
    if current.active_migration is None:
        missing = missing_pods(name, current, await _view(ctx, token, namespace, name))
        created = await act.deploy(ctx.kube, query, spec, current, missing, ctx.image)
        if created:
            events.normal(body, "PodsCreated", f"created {', '.join(created)}")
    view = await _view(ctx, token, namespace, name)
    findings.append(dependencies.snapshot_age(spec, view, previous.get("conditions", []), now))
    _warn(body, findings, previous.get("conditions", []))
    patch = status.observed(current, view, name, now, previous.get("conditions", []), findings)
    patch.update(
        epoch=current.epoch,
        plan=None if current.plan is None else current.plan.wire(),
        selector=selector(name),
        observedGeneration=body["metadata"]["generation"],
    )
    version = body["metadata"]["resourceVersion"]
    if not await ctx.kube.patch_status(STREAM_QUERIES, namespace, name, patch, version):
        return False
    await _follow_up(ctx, body, spec, current, diff)
    loads = {pod: report.load for pod, report in view.reports.items() if report.load}
    observed = StreamQueryStatus.model_validate({**previous, **patch})
    await autoscale(ctx.kube, body, spec, observed, loads)
    return True


async def _validate(
    ctx: Context, namespace: str, raw: dict[str, Any]
) -> tuple[StreamQuerySpec, str, str, str]:
    """The spec, and the control token and S3 access and secret keys it names."""
    try:
        spec = StreamQuerySpec.model_validate(raw)
    except ValidationError as error:
        raise Problem("InvalidSpec", f"spec: {error}", permanent=True) from None
    report = check_plan(spec)
    if report.problems:
        raise Problem("InvalidPlan", report.message, permanent=True)
    refs = [
        ("spec.controlToken", spec.control_token),
        ("spec.snapshot.credentials.accessKey", spec.snapshot.credentials.access_key),
        ("spec.snapshot.credentials.secretKey", spec.snapshot.credentials.secret_key),
    ]
    token, access, secret = [await _secret(ctx, namespace, field, ref) for field, ref in refs]
    return spec, token, access, secret


def _kafka_ready(findings: list[Finding]) -> None:
    """Before the first placement: Kafka must answer, its topics fit the spec (`Problem`)."""
    for finding in findings:
        if finding.condition == dependencies.KAFKA and not finding.ok:
            raise Problem(finding.reason, finding.message, permanent=False)


def _warn(body: dict[str, Any], findings: list[Finding], previous: list[dict[str, Any]]) -> None:
    """A Warning Event for each dependency that fails anew (its condition was not failing
    with the same reason before)."""
    before = {c["type"]: c for c in previous}
    for finding in findings:
        old = before.get(finding.condition)
        anew = old is None or old["status"] != "False" or old["reason"] != finding.reason
        if not finding.ok and anew:
            events.warning(body, finding.reason, finding.message)


async def _secret(ctx: Context, namespace: str, field: str, ref: SecretKeyRef) -> str:
    value = await ctx.kube.secret_value(namespace, ref.name, ref.key)
    if value is None:
        raise Problem(
            "MissingSecret",
            f"{field}: Secret {ref.name!r} with key {ref.key!r} not found in namespace "
            f"{namespace}: create it (kubectl create secret generic {ref.name} "
            f"--from-literal={ref.key}=...) or point {field} at an existing one",
            permanent=False,
        )
    return value


async def _topics(spec: StreamQuerySpec) -> None:
    try:
        await act.topics(spec)
    except TopicError as error:
        raise Problem("KafkaTopics", str(error), permanent=False) from None


async def _view(ctx: Context, token: str, namespace: str, name: str) -> QueryView:
    return await observe(ctx.kube, ctx.control(token), namespace, name)


async def _follow_up(
    ctx: Context,
    body: dict[str, Any],
    spec: StreamQuerySpec,
    current: StreamQueryStatus,
    diff: DiffType,
) -> None:
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    migrations = await ctx.kube.list(MIGRATIONS, namespace)
    generation = body["metadata"]["generation"]
    for migration in follow_ups(name, generation, diff, spec, current, migrations):
        migration["metadata"]["ownerReferences"] = [
            {
                "apiVersion": body["apiVersion"],
                "kind": body["kind"],
                "name": name,
                "uid": body["metadata"]["uid"],
            }
        ]
        if await ctx.kube.create(MIGRATIONS, namespace, migration):
            events.normal(
                body,
                "MigrationCreated",
                f"spec changed: created Migration {migration['metadata']['name']} "
                f"(protocol {migration['spec']['protocol']})",
            )
