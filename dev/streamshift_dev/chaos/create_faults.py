"""A query created with an unreachable dependency: Kafka's bootstrap address or the S3 endpoint
pointing at a loopback port nobody listens on. Passing means refused with a clear status: the
query Degraded with the dependency's condition False, its reason and a message naming the
address, and a Warning Event; detection is the seconds from the create to that status."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from streamshift_dev.chaos.context import Context
from streamshift_dev.chaos.migrations import chaos_case
from streamshift_dev.chaos.results import Outcome, Verdict
from streamshift_dev.runtime_cases import plan_inline
from streamshift_dev.stack_driver import SQ, TimedOut, stream_query, wait_for
from streamshift_dev.workers import free_port

LIMIT_S = 60.0


def unreachable(dependency: str) -> Callable[[str, Context], Outcome]:
    """`dependency` ("kafka" or "s3") unreachable at create."""
    condition, reason = {
        "kafka": ("KafkaReady", "KafkaUnreachable"),
        "s3": ("SnapshotStoreReady", "SnapshotStoreUnreachable"),
    }[dependency]

    def scenario(name: str, ctx: Context) -> Outcome:
        address = f"127.0.0.1:{free_port()}"
        broken = (
            replace(ctx.stack, kafka=address)
            if dependency == "kafka"
            else replace(ctx.stack, s3_endpoint=f"http://{address}")
        )
        case = chaos_case("unimico")
        began = time.monotonic()
        ctx.kube.namespace(ctx.ns)
        try:
            body = stream_query(
                "q",
                plan_inline(case.plan),
                list(case.feed.before),
                ctx.ns,
                case.partitions,
                1,
                broken,
            )
            created = time.time()
            ctx.kube.create(SQ, ctx.ns, body)
            try:
                found = wait_for(
                    f"{condition} False", lambda: _refused(ctx, condition, address), LIMIT_S
                )
            except TimedOut as error:
                status = ctx.kube.status(SQ, ctx.ns, "q")
                what = f"phase {status.get('phase')!r}, conditions {status.get('conditions')}"
                return Outcome(
                    name,
                    Verdict.FAILED,
                    None,
                    None,
                    f"{error}; {what}"[:400],
                    time.monotonic() - began,
                )
            detection = time.time() - created
            warned = ctx.kube.warnings(ctx.ns, "q")
            problems = []
            if found["reason"] != reason:
                problems.append(f"reason {found['reason']} (expected {reason})")
            if not warned:
                problems.append("no Warning Event")
            seconds = time.monotonic() - began
            if problems:
                return Outcome(name, Verdict.FAILED, detection, None, "; ".join(problems), seconds)
            message = f"Degraded, {condition}={found['reason']}: {found['message'][:140]}"
            return Outcome(name, Verdict.REFUSED, detection, None, message, seconds)
        finally:
            ctx.clean_up()

    return scenario


def _refused(ctx: Context, condition: str, address: str) -> dict[str, Any] | None:
    """The dependency's condition once it is False naming `address` and the query Degraded."""
    status = ctx.kube.status(SQ, ctx.ns, "q")
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    found = conditions.get(condition)
    if status.get("phase") != "Degraded" or found is None or found.get("status") != "False":
        return None
    return found if address in str(found.get("message")) else None
