"""Verify a query's output against a reference run without migration (spec.verify).

The reference is the engine's in-process `Instance` over every input record in the source topics
(JSON records, Kafka offsets as event order, as the workers read them); the output is the sink
topic read `read_committed`. Both are compared over the windows that both have closed: results
whose window ends at or below `bound` (the smallest watermark of the workers and of the
reference); a result without a window (a range join's, `window_end` -1) is final once its
last tuple is read, so the reference's are compared when their `max_ts` is at or below `bound`.
For a plan change the reference is the target plan's: exact when both plans give the same
answer (a join order, whose results are named by their base tuples). A reference result absent
from the output, or present with other values, is missing; an output id seen more than once is
a duplicate. Blocking: run it in a thread.
"""

import time
from collections import Counter
from typing import Any

import orjson
from confluent_kafka import Consumer, TopicPartition
from streamshift_engine.events.wire import Schema, decode_json
from streamshift_engine.plan import builtin, parse_plan
from streamshift_engine.runner import Instance

from streamshift_operator.models.migration import Verification
from streamshift_operator.models.streamquery import StreamQuerySpec

TIMEOUT_S = 30.0
QUIET_S = 3.0  # an open transaction holds read_committed readers below its start


def read_all(bootstrap: str, topic: str, committed: bool) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of `topic` up to its end now, per partition: (offset, value)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"streamshift-verify-{time.time_ns()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if committed else "read_uncommitted",
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT_S)[1]
            for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        records: dict[int, list[tuple[int, bytes]]] = {p: [] for p in partitions}
        deadline = time.monotonic() + TIMEOUT_S
        quiet = time.monotonic() + QUIET_S
        while time.monotonic() < min(deadline, quiet):
            for message in consumer.consume(10_000, 0.5):
                quiet = time.monotonic() + QUIET_S
                value, partition, offset = message.value(), message.partition(), message.offset()
                if message.error() is None and None not in (value, partition, offset):
                    records[int(partition or 0)].append((int(offset or 0), bytes(value or b"")))
            positions = consumer.position([TopicPartition(topic, p) for p in partitions])
            if all(tp.offset >= ends[tp.partition] for tp in positions):
                break
        return records
    finally:
        consumer.close()


def reference(
    spec: StreamQuerySpec, plan_doc: dict[str, Any]
) -> tuple[list[tuple[dict[str, Any], int]], int]:
    """The reference results (no end-of-input flush) with the event time from which each is
    final (its window's end, or its last tuple's), and the reference watermark."""
    plan = builtin(plan_doc["builtin"]) if "builtin" in plan_doc else parse_plan(plan_doc["inline"])
    partitions = spec.sources[0].partitions
    instance = Instance(plan, range(partitions))
    topics = {source.name: source.topic for source in spec.sources}
    for spec_input in plan.inputs:
        schema = Schema(spec_input.name, tuple(spec_input.schema.items()), spec_input.time_field)  # type: ignore[arg-type]
        for partition, records in read_all(
            spec.kafka.bootstrap_servers, topics[spec_input.name], False
        ).items():
            if records:
                batch, _ = decode_json(
                    spec_input.name,
                    [value for _, value in records],
                    [partition] * len(records),
                    [offset for offset, _ in records],
                    schema,
                )
                instance.feed(spec_input.name, partition, batch)
    results = [
        (record, end if end >= 0 else last)
        for batch in instance.poll()
        for record, end, last in zip(
            batch.to_records(), batch.window_end.tolist(), batch.max_ts.tolist(), strict=True
        )
    ]
    return results, instance.watermark() or -1


def verify(spec: StreamQuerySpec, plan_doc: dict[str, Any], workers_watermark: int) -> Verification:
    """Compare the sink topic with the reference over the windows both have closed."""
    expected, reference_watermark = reference(spec, plan_doc)
    bound = min(workers_watermark, reference_watermark)
    output = read_all(spec.kafka.bootstrap_servers, spec.sinks[0].topic, True)
    seen = [orjson.loads(value) for records in output.values() for _, value in records]
    closed = [r for r in seen if r["window_end"] <= bound]
    counts = Counter(r["id"] for r in closed)
    present = {orjson.dumps(r, option=orjson.OPT_SORT_KEYS) for r in closed}
    wanted = [r for r, final in expected if final <= bound]
    missing = sum(1 for r in wanted if orjson.dumps(r, option=orjson.OPT_SORT_KEYS) not in present)
    duplicate = sum(n - 1 for n in counts.values() if n > 1)
    return Verification(missing=missing, duplicate=duplicate, exact=missing == duplicate == 0)
