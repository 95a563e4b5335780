"""Faults while a query runs without a Migration, its input flowing: poison records, its Kafka
broker restarted, its MinIO down during snapshots.

`run_stream` creates the query of a `runtime_cases` case (Nexmark q5), feeds its input part by
part (`CHUNK_EVERY_S` apart, a hook before each chunk where a fault is played), then the first
tail, and compares the output topic and the dead-letter topic with the in-process reference
(`runtime_cases.reference`; poison records produced as raw bytes are added to it with their
Kafka coordinates, shifting the later offsets of their partition).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from confluent_kafka import Producer
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import Schema, decode_json
from streamshift_engine.runtime.config import MAX_RECORD_BYTES
from streamshift_engine.runtime.dead_letters import oversize

from streamshift_dev.runtime_cases import (
    Expected,
    RuntimeCase,
    canonical,
    plan_inline,
    records,
    reference,
)
from streamshift_dev.runtime_run import (
    CHUNK_EVERY_S,
    READ_S,
    READY_S,
    dead_letter_problems,
    result_problems,
)
from streamshift_dev.stack_driver import (
    SQ,
    Kube,
    Stack,
    TimedOut,
    produce,
    read_committed,
    stream_query,
    wait_for,
)

Letter = tuple[str, int, int, str, bytes]


@dataclass
class Poison:
    """Raw records produced on input `source`'s partition 0 before chunk `at`: each with the
    dead letter it must become (reason; whole value or truncated), filled in with its offset."""

    source: str
    at: int
    values: list[bytes]
    offsets: list[int] = field(default_factory=list)


@dataclass
class StreamRun:
    """What a stream run found: problems with the output, the counts compared."""

    problems: list[str] = field(default_factory=list)
    results: int = 0
    dead_letters: int = 0


def run_stream(
    case: RuntimeCase,
    kube: Kube,
    stack: Stack,
    ns: str,
    before_chunk: Callable[[int], None] = lambda _: None,
    poison: Poison | None = None,
) -> StreamRun:
    """Query `q` of `case` in namespace `ns` (created here) fed its input with `before_chunk(i)`
    called before chunk `i`, `poison` produced where it says; its output compared."""
    kube.namespace(ns)
    names = list(case.feed.before)
    body = stream_query("q", plan_inline(case.plan), names, ns, case.partitions, 1, stack)
    kube.create(SQ, ns, body)
    wait_for("the StreamQuery Running", lambda: kube.running(ns, "q"), READY_S)
    produce(stack, records(case.feed.before, ns))
    for index, chunk in enumerate(case.feed.chunks):
        before_chunk(index)
        if poison is not None and poison.at == index:
            poison.offsets = produce_raw(stack, f"{ns}-{poison.source}", poison.values)
        produce(stack, records(chunk, ns))
        time.sleep(CHUNK_EVERY_S)
    produce(stack, records(case.feed.tails[0], ns))
    expected = reference(case, 1)
    if poison is not None:
        expected = with_poison(expected, poison, case)
    return compare(expected, stack, ns)


def produce_raw(stack: Stack, topic: str, values: list[bytes]) -> list[int]:
    """Produce `values` to partition 0 of `topic` in order; their offsets."""
    producer = Producer(
        {
            "bootstrap.servers": stack.kafka,
            "enable.idempotence": True,
            "message.max.bytes": 2_000_000,
        }
    )
    offsets: list[int] = []

    def delivered(error: Any, message: Any) -> None:
        offsets.append(-1 if error else int(message.offset()))

    for value in values:  # one at a time: the offsets come back in order
        producer.produce(topic, value, partition=0, on_delivery=delivered)
        if producer.flush(30):
            raise TimedOut("a poison record still unsent after 30 s")
    if len(offsets) != len(values) or min(offsets) < 0:
        raise TimedOut(f"poison records not all produced: offsets {offsets}")
    return offsets


def with_poison(expected: Expected, poison: Poison, case: RuntimeCase) -> Expected:
    """The reference's dead letters with the poison records' own, and the offsets of the
    partition's later records shifted past them."""
    first = poison.offsets[0]
    shift = len(poison.values)
    letters: Counter[Letter] = Counter()
    for (source, partition, offset, reason, value), count in expected.dead_letters.items():
        moved = source == poison.source and partition == 0 and offset >= first
        letters[(source, partition, offset + shift if moved else offset, reason, value)] += count
    spec = case.plan.input(poison.source)
    schema = Schema(poison.source, tuple(spec.schema.items()), spec.time_field)  # type: ignore[arg-type]
    for value, offset in zip(poison.values, poison.offsets, strict=True):
        letters[(poison.source, 0, offset, poison_reason(value, schema), value)] += 1
    return Expected(expected.results, letters)


def poison_reason(value: bytes, schema: Schema) -> str:
    """Why the worker rejects `value`: too long, or the engine's own decoder's reason."""
    if len(value) > int(MAX_RECORD_BYTES):
        return oversize(len(value), int(MAX_RECORD_BYTES))
    _, dead = decode_json(schema.source, [value], [0], [0], schema)
    if len(dead) != 1:
        raise ValueError(f"not poison: {value[:80]!r}")
    return dead[0].reason


def compare(expected: Expected, stack: Stack, ns: str) -> StreamRun:
    """The output and dead-letter topics against `expected`, both ways; a truncated dead letter
    (an oversize record) matches the record it begins when its headers give the whole size."""
    total = sum(expected.results.values())
    output = read_committed(stack, f"{ns}-out", total, READ_S)
    got = Counter(canonical(json.loads(value)) for value, _ in output)
    run = StreamRun(result_problems(expected.results, got), total)
    dead = sum(expected.dead_letters.values())
    run.dead_letters = dead
    letters = read_committed(stack, f"{ns}-out.dead", dead, READ_S if dead else 3.0, quiet=1.0)
    originals = {(s, p, o): v for s, p, o, _, v in expected.dead_letters}
    found: Counter[Letter] = Counter()
    for value, headers in letters:
        at = (
            headers.get("source", ""),
            int(headers.get("partition", -1)),
            int(headers.get("offset", -1)),
        )
        original = originals.get(at, b"")
        whole = headers.get("truncated") == "true" and original.startswith(value)
        if whole and headers.get("size") == str(len(original)):
            value = original
        found[(*at, headers.get("reason", ""), value)] += 1
    run.problems += dead_letter_problems(expected.dead_letters, found)
    return run


def with_event_times(
    case: RuntimeCase, chunk: int, source: str, times: dict[int, int]
) -> RuntimeCase:
    """`case` with the records of chunk `chunk` of `source` at the given rows given new event
    times (far in the past or the future): still well-formed records, at the same offsets."""
    batch = case.feed.chunks[chunk][source]
    ts = batch.ts.copy()
    for row, at in times.items():
        ts[row] = at
    field_name = case.plan.input(source).time_field
    columns = {**batch.columns, field_name: ts.astype(batch.columns[field_name].dtype)}
    changed = Batch(batch.source, ts, batch.partition, batch.offset, columns)
    chunks = list(case.feed.chunks)
    chunks[chunk] = {**chunks[chunk], source: changed}
    return replace(case, feed=replace(case.feed, chunks=chunks))


def row_in_partition(batch: Batch, partition: int, last: bool = False) -> int:
    """The first (or last) row of `batch` in `partition`."""
    rows = np.flatnonzero(batch.partition == partition)
    if not len(rows):
        raise ValueError(f"no record of {batch.source} in partition {partition}")
    return int(rows[-1] if last else rows[0])
