"""The scenarios played on a query without a Migration (`streams.run_stream`): poison records,
the broker restarted mid-stream, MinIO down during snapshots."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from kubernetes.client.exceptions import ApiException

from streamshift_dev.chaos.context import Context
from streamshift_dev.chaos.migrations import FAMILY, chaos_case
from streamshift_dev.chaos.results import Outcome, Verdict
from streamshift_dev.chaos.streams import (
    Poison,
    StreamRun,
    row_in_partition,
    run_stream,
    with_event_times,
)
from streamshift_dev.private_kafka import PrivateKafka
from streamshift_dev.private_minio import PrivateMinio
from streamshift_dev.stack_driver import SQ, Stack, ensure_bucket

YEAR_MS = 365 * 24 * 3600 * 1000
OVERSIZE_BYTES = 1_020_000  # beyond the worker's 1,000,000-byte bound, within the broker's
MALFORMED = b'{"auction": 1, "bidder": "not a number'
BROKER_DOWN_S = 8.0
MINIO_DOWN_S = 25.0  # more than two snapshot intervals (10 s)
BACK_S = 60.0
POD = "q-e0-0"  # the query's one worker pod (epoch 0, instance 0)


def _verdict(
    name: str,
    run: StreamRun,
    began: float,
    detection: float | None,
    recovery: float | None,
    note: str,
) -> Outcome:
    seconds = time.monotonic() - began
    counts = f"{run.results} results, {run.dead_letters} dead letters"
    if run.problems:
        return Outcome(name, Verdict.FAILED, detection, recovery, "; ".join(run.problems), seconds)
    return Outcome(name, Verdict.EXACT, detection, recovery, f"{note}; {counts} exact", seconds)


def poison(name: str, ctx: Context) -> Outcome:
    """An oversize and a malformed record produced mid-stream, one record far in the past and
    one far in the future (10 years): each a dead letter as the reference says, the rest exact."""
    case = chaos_case("unimico")
    source = case.plan.inputs[0].name
    middle, last = len(case.feed.chunks) // 2, len(case.feed.chunks) - 1
    past = row_in_partition(case.feed.chunks[middle][source], 1)
    future_chunk = case.feed.chunks[last][source]
    future = row_in_partition(future_chunk, 2, last=True)
    case = with_event_times(case, middle, source, {past: 1_000})
    case = with_event_times(
        case, last, source, {future: int(future_chunk.ts[future]) + 10 * YEAR_MS}
    )
    big = b'{"pad": "' + b"x" * OVERSIZE_BYTES + b'"}'
    bad = Poison(source, middle, [big, MALFORMED])
    began = time.monotonic()
    try:
        run = run_stream(case, ctx.kube, ctx.stack, ctx.ns, poison=bad)
    finally:
        ctx.clean_up()
    note = f"{FAMILY}: oversize {len(big)} B, malformed, far-past and far-future records"
    return _verdict(name, run, began, None, None, note)


class FirstOutput(threading.Thread):
    """The time the first output record committed after `start_at` offsets arrives."""

    def __init__(self, stack: Stack, topic: str, partitions: int) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer(
            {
                "bootstrap.servers": stack.kafka,
                "group.id": f"chaos-{time.time_ns()}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        self.topic, self.partitions = topic, partitions
        self.arrived: float | None = None
        self.stop = threading.Event()

    def from_now(self) -> None:
        """Read from the topic's current end on (in a thread of its own: `start`)."""
        ends = [
            self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), 10)[1]
            for p in range(self.partitions)
        ]
        self.consumer.assign([TopicPartition(self.topic, p, e) for p, e in enumerate(ends)])
        self.start()

    def run(self) -> None:
        try:
            while not self.stop.is_set() and self.arrived is None:
                for message in self.consumer.consume(10, 0.2):
                    if message.error() is None:
                        self.arrived = time.time()
        finally:
            self.consumer.close()


def broker_mid_stream(name: str, ctx: Context) -> Outcome:
    """The query's private broker stopped mid-stream and started `BROKER_DOWN_S` later: the
    worker must be back (its first output committed) within 30 s of the broker's return."""
    folder = ctx.folder / f"{name}-kafka"
    folder.mkdir(parents=True)
    broker = PrivateKafka(folder)
    broker.start()
    stack = replace(ctx.stack, kafka=broker.bootstrap)
    case = chaos_case("unimico")
    at = len(case.feed.chunks) // 2
    marks: dict[str, Any] = {}

    def before_chunk(index: int) -> None:
        if index != at:
            return
        broker.stop()
        time.sleep(BROKER_DOWN_S)
        broker.start()
        marks["back"] = time.time()
        marks["first"] = FirstOutput(stack, f"{ctx.ns}-out", case.partitions)
        marks["first"].from_now()

    began = time.monotonic()
    try:
        run = run_stream(case, ctx.kube, stack, ctx.ns, before_chunk)
        first = marks.get("first")
        recovery = None
        if first is not None:
            first.join(BACK_S)
            first.stop.set()
            recovery = None if first.arrived is None else first.arrived - marks["back"]
        if recovery is None:
            run.problems.append("no output after the broker's return")
    finally:
        ctx.clean_up(stack)
        broker.stop()
    return _verdict(
        name, run, began, None, recovery, f"{FAMILY}: broker down {BROKER_DOWN_S:.0f} s"
    )


def _condition(ctx: Context, kind: str) -> dict[str, Any] | None:
    status = ctx.kube.status(SQ, ctx.ns, "q")
    found = [c for c in status.get("conditions") or [] if c.get("type") == kind]
    return found[0] if found else None


def minio_outage(name: str, ctx: Context) -> Outcome:
    """The query's private MinIO killed mid-stream for `MINIO_DOWN_S` (snapshots fail and are
    retried), started again, then the worker pod deleted so the query restores from what the
    store holds: the output exact. Detection: to SnapshotStoreReady False; recovery: from the
    store's return to the query Running on its new pod."""
    folder = ctx.folder / f"{name}-minio"
    store = PrivateMinio(folder, ctx.stack.s3_access_key, ctx.stack.s3_secret_key)
    store.start()
    stack = replace(ctx.stack, s3_endpoint=store.endpoint)
    ensure_bucket(stack)
    case = chaos_case("unimico")
    at = len(case.feed.chunks) // 2
    marks: dict[str, float] = {}

    def before_chunk(index: int) -> None:
        if index != at:
            return
        down = time.time()
        store.stop()
        while time.time() - down < MINIO_DOWN_S:
            found = _condition(ctx, "SnapshotStoreReady")
            if "detected" not in marks and found is not None and found.get("status") == "False":
                marks["detected"] = time.time() - down
            time.sleep(0.5)
        store.start()
        back = time.time()
        old = ctx.kube.core.read_namespaced_pod(POD, ctx.ns).metadata.uid
        ctx.kube.core.delete_namespaced_pod(POD, ctx.ns)
        while time.time() - back < BACK_S:
            if _replaced_and_ready(ctx, old):
                marks["recovered"] = time.time() - back
                return
            time.sleep(0.3)

    began = time.monotonic()
    try:
        run = run_stream(case, ctx.kube, stack, ctx.ns, before_chunk)
        if "recovered" not in marks:
            run.problems.append(f"the query was not Running again within {BACK_S:.0f} s")
    finally:
        ctx.clean_up(stack)
        store.stop()
    note = f"{FAMILY}: MinIO down {MINIO_DOWN_S:.0f} s, then the worker pod deleted"
    return _verdict(name, run, began, marks.get("detected"), marks.get("recovered"), note)


def _replaced_and_ready(ctx: Context, old_uid: str) -> bool:
    """Whether a new pod runs the instance and the query says Running with it ready."""
    try:
        pod = ctx.kube.core.read_namespaced_pod(POD, ctx.ns)
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    if pod.metadata.uid == old_uid or pod.metadata.deletion_timestamp is not None:
        return False
    status = ctx.kube.running(ctx.ns, "q")
    return bool(status and all(i.get("ready") for i in status.get("instances") or []))
