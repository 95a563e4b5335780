"""Verify a query's output against a reference run without migration (spec.verify).

The output is the sink topic read `read_committed`; the reference is the engine's in-process
`Instance` over every input record (Kafka offsets as event order), decoded as the workers decode
(`verification_diff`). The comparison covers the whole output: every result final at or below
`bound`, the smaller of the reference's watermark and the watermark the workers committed with
their output (the offset metadata `event_offset:watermark` of the query's consumer group on
every source partition: the output is complete up to it). It is read in that order, commits,
then output, then input, so the reference has read every record the output came from.

Windows still open at the hand-off close after the verification starts. `touched_to` is the
targets' watermark when it starts (after the hand-off): every window the migration touched
starts at or below it, so ends at or below `touched_to` plus the longest window seen in the
output. The verification waits, up to `WAIT_S`, until the committed watermark passes that
point, or the workers' commits reach the end of the input and that end stays put for
`STOPPED_S` (the input has stopped: no more windows close, and those still open have no result
in the reference either; a live input the workers keep up with is at its end only for
moments). A comparison that cannot reach that point is not exact and says so. Blocking:
`verify_in_background` runs it on a thread of lowered priority.
"""

import asyncio
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
from confluent_kafka import Consumer, TopicPartition
from streamshift_engine.plan.model import Plan
from streamshift_engine.runtime.source import committed_offsets

from streamshift_operator.migration.verification_diff import compare, extent, plan_of, reference
from streamshift_operator.models.migration import Verification
from streamshift_operator.models.streamquery import StreamQuerySpec
from streamshift_operator.resources.pods import QueryIdentity

TIMEOUT_S = 30.0
WAIT_S = 60.0  # for the windows open at the hand-off to close in the committed output
POLL_S = 0.5
STOPPED_S = 3.0  # commits at an input's end that has not moved for this long: it has stopped
VERIFY_NICE = 10
"""The niceness of the threads verifications run on. A verification replays the query's whole
input through the engine, tens of CPU seconds after a long run; the queries themselves and the
operator's reconciling come first where they share cores (on the local stack, where everything
shares two, a verification at niceness 0 starved the load's producer and the workers through its
Finalizing: docs/autoscaler.md)."""
VERIFY_THREADS = 8
"""Verifications at once; more wait for a thread. A verification mostly waits for windows to
close (up to `WAIT_S`); `asyncio.to_thread`'s pool, which they shared with every other blocking
call before, has 6 threads on two cores."""


def _lower_priority() -> None:
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), VERIFY_NICE)  # this thread only


_THREADS = ThreadPoolExecutor(VERIFY_THREADS, "verify", initializer=_lower_priority)


def _consumer(bootstrap: str, committed: bool, group: str | None = None) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group or f"streamshift-verify-{time.time_ns()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if committed else "read_uncommitted",
        }
    )


def read_all(bootstrap: str, topic: str, committed: bool) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of `topic` up to its end now, per partition: (offset, value).

    Read `read_committed`, a partition's end is its last stable offset: the first record of a
    transaction still open, which the read neither returns nor waits for. A partition that
    holds no record is not read: its position would stay unset, never reaching its end."""
    consumer = _consumer(bootstrap, committed)
    try:
        partitions = consumer.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions
        bounds = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT_S)
            for p in partitions
        }
        ends = {p: high for p, (low, high) in bounds.items() if high > low}
        records: dict[int, list[tuple[int, bytes]]] = {p: [] for p in partitions}
        consumer.assign([TopicPartition(topic, p, bounds[p][0]) for p in ends])
        deadline = time.monotonic() + TIMEOUT_S
        while ends and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 0.1):
                value, partition, offset = message.value(), message.partition(), message.offset()
                if message.error() is None and None not in (value, partition, offset):
                    records[int(partition or 0)].append((int(offset or 0), bytes(value or b"")))
            positions = consumer.position([TopicPartition(topic, p) for p in ends])
            if all(tp.offset >= ends[tp.partition] for tp in positions):
                break
        return records
    finally:
        consumer.close()


def group_of(query: QueryIdentity) -> str:
    """The consumer group the workers commit to (`WorkerConfig.group` of the engine)."""
    return f"streamshift.{query.namespace}.{query.name}"


def committed_watermark(
    spec: StreamQuerySpec, group: str
) -> tuple[int | None, tuple[int, ...] | None]:
    """The smallest watermark committed with the output over every source partition (None
    while one has no commit with a watermark), and, when the commits reach the end of every
    source partition, those ends (else None)."""
    wanted = [
        TopicPartition(source.topic, p) for source in spec.sources for p in range(source.partitions)
    ]
    consumer = _consumer(spec.kafka.bootstrap_servers, True, group)
    try:
        found = committed_offsets(consumer, wanted, TIMEOUT_S)
        ends = [consumer.get_watermark_offsets(tp, TIMEOUT_S)[1] for tp in found]
    finally:
        consumer.close()
    marks = []
    for tp in found:
        _, _, mark = (tp.metadata or "").partition(":")
        if tp.error is not None or tp.offset < 0 or not mark.lstrip("-").isdigit():
            return None, None
        marks.append(int(mark))
    at_end = all(tp.offset >= end for tp, end in zip(found, ends, strict=True))
    return min(marks, default=None), tuple(ends) if at_end else None


def output_records(spec: StreamQuerySpec) -> list[dict[str, Any]]:
    sink = spec.sinks[0].topic
    output = read_all(spec.kafka.bootstrap_servers, sink, True)
    return [orjson.loads(value) for records in output.values() for _, value in records]


def window_length(records: Sequence[dict[str, Any]]) -> int:
    """The longest window among output records (0 when none has a window)."""
    spans = [r["window_end"] - r["window_start"] for r in records if r.get("window_end", -1) >= 0]
    return max(spans, default=0)


def verify(
    spec: StreamQuerySpec,
    plan_doc: dict[str, Any],
    query: QueryIdentity,
    touched_to: int,
    wait_s: float = WAIT_S,
) -> Verification:
    """Wait for the windows the migration touched to close, then compare the whole output."""
    group = group_of(query)
    plan = plan_of(plan_doc)
    need = touched_to + window_length(output_records(spec))
    deadline = time.monotonic() + wait_s
    ends_seen: tuple[int, ...] | None = None
    since = time.monotonic()
    while True:
        while time.monotonic() < deadline:
            mark, ends = committed_watermark(spec, group)
            if ends != ends_seen:
                ends_seen, since = ends, time.monotonic()
            stopped = ends is not None and time.monotonic() - since >= STOPPED_S
            if stopped or (mark is not None and mark >= need):
                break
            time.sleep(POLL_S)
        result, bound, need = _compare_once(spec, plan, group, need, touched_to)
        if result is None or bound >= need or time.monotonic() >= deadline:
            break
        time.sleep(POLL_S)
    if result is None:
        return Verification(
            exact=False, message="no watermark committed with the output: nothing compared"
        )
    if bound >= need:
        return result
    short = (
        f"; the windows open at the hand-off close by event time {need}, but the output was "
        f"complete only to {bound} after waiting {wait_s:.0f} s"
    )
    return result.model_copy(update={"exact": False, "message": f"{result.message}{short}"})


def _compare_once(
    spec: StreamQuerySpec, plan: Plan, group: str, need: int, touched_to: int
) -> tuple[Verification | None, int, int]:
    """Commits, then output, then input (so the reference has read all the output came from):
    the comparison, its bound, and the point the bound must reach: the end of the longest
    result the reference saw (it may reach further than the output's windows) after
    `touched_to`, but no further than the reference's watermark (with the input stopped, a
    window still open there has no result anywhere yet)."""
    mark, _ = committed_watermark(spec, group)
    output = output_records(spec)
    topics = {source.name: source.topic for source in spec.sources}
    inputs = {
        spec_input.name: read_all(spec.kafka.bootstrap_servers, topics[spec_input.name], False)
        for spec_input in plan.inputs
    }
    expected = reference(plan, spec.sources[0].partitions, inputs)
    if mark is None or expected.watermark is None:
        return None, -1, need
    need = min(max(need, touched_to + extent(expected.results)), expected.watermark)
    bound = min(mark, expected.watermark)
    return compare(expected, output, bound), bound, need


async def verify_in_background(
    spec: StreamQuerySpec, plan_doc: dict[str, Any], query: QueryIdentity, touched_to: int
) -> Verification:
    """`verify` on a thread of its own pool, at `VERIFY_NICE`."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_THREADS, verify, spec, plan_doc, query, touched_to)
