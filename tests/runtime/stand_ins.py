"""Stand-ins for a worker's Kafka consumer, sink and S3 (`runtime.loop`), recording what the loop
hands them, around the real engine and the source's real decoding: for tests of the loop's own
rules (the mini-batch hold, the replay's suppression) without a broker. The consumer stand-in
returns JSON records as a consume does (`KafkaSource.records`: Kafka offsets and values per
position); `KafkaSource.read` and `decode` run as in a worker."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter, encode_json
from streamshift_engine.plan import builtin
from streamshift_engine.runner import Hold, collect
from streamshift_engine.runtime import loop
from streamshift_engine.runtime.liveness import Progress
from streamshift_engine.runtime.loop import Worker
from streamshift_engine.runtime.metrics import Metrics
from streamshift_engine.runtime.projection import input_schemas, projected
from streamshift_engine.runtime.source import KafkaSource, Records

PARTITIONS = 2
MAX_RECORD_BYTES = 4096
Position = tuple[str, int]
Consume = dict[Position, Records]  # what one consume returns (`KafkaSource.records`)
Fetch = tuple[dict[Position, Batch], list[DeadLetter]]  # records decoded, and malformed ones


@dataclass
class Committed:
    """What one commit made visible: positions, watermark, all output and dead letters so far."""

    positions: dict[Position, int]
    watermark: int | None
    results: list[str]
    letters: list[tuple[str, int, int, str]]


def consume_of(fetch: Fetch) -> Consume:
    """The consume that returns `fetch`'s records encoded as JSON, and a malformed record (`{`)
    at each dead letter's offset, per position in offset order."""
    batches, letters = fetch
    found: dict[Position, list[tuple[int, bytes]]] = {}
    for position, batch in batches.items():
        found.setdefault(position, []).extend(
            zip(batch.offset.tolist(), encode_json(batch), strict=True)
        )
    for letter in letters:
        found.setdefault((letter.source, letter.partition), []).append((letter.offset, b"{"))
    consume: Consume = {}
    for position, records in found.items():
        records.sort()
        offsets = np.array([offset for offset, _ in records], np.int64)
        consume[position] = (offsets, cast(Any, [value for _, value in records]))
    return consume


class FakeSource(KafkaSource):
    """A `KafkaSource` whose consumes return `consumes` in turn, then nothing; no Kafka."""

    def __init__(self, config: Any, consumes: list[Consume]) -> None:
        self.config = config
        self.names = [s.name for s in config.plan.inputs]
        self.schemas = config.schemas
        self.slots = 1
        self.floor: dict[Position, int] = {}
        self.assigned: dict[Position, int] = {}
        self.paused: set[Position] = set()
        self.progress = Progress(30.0, 0.5)
        self.waited = 0.0
        self.consumer = cast(Any, None)
        self.consumes = consumes

    def records(self, timeout: float) -> dict[Position, Records]:
        return self.consumes.pop(0) if self.consumes else {}

    def _waiting(self, positions: list[Position]) -> set[Position]:
        return set()

    def seek(self, positions: Mapping[Position, int]) -> None:
        for position, offset in positions.items():
            self.floor[position] = self.assigned[position] = offset

    def pause(self, positions: object) -> None:
        pass

    def wake(self) -> None:
        pass


@dataclass
class FakeSink:
    results_so_far: list[str] = field(default_factory=list)
    letters_so_far: list[tuple[str, int, int, str]] = field(default_factory=list)
    commits: list[Committed] = field(default_factory=list)
    emits: int = 0

    def results(self, results: list[ResultBatch]) -> int:
        self.emits += 1
        records = [json.dumps(r, sort_keys=True) for r in collect(results)]
        self.results_so_far += records
        return len(records)

    def dead_letters(self, letters: list[DeadLetter]) -> None:
        self.letters_so_far += [(d.source, d.partition, d.offset, d.reason) for d in letters]

    def settle(self, wait: bool = True) -> bool:
        return True

    def start_commit(self, owned: dict[Position, int], watermark: int | None, *rest: Any) -> None:
        self.commits.append(
            Committed(dict(owned), watermark, list(self.results_so_far), list(self.letters_so_far))
        )
        rest[1]()  # the commit ended (`Worker._committed`)


def worker(
    monkeypatch: pytest.MonkeyPatch,
    plan_name: str,
    inputs: Sequence[Fetch] | Sequence[Consume],
    hold: Hold | None,
) -> Worker:
    """A worker of `plan_name` reading `inputs` (consumes, or their records decoded:
    `consume_of`) from offset 0 of every position, its Kafka, sink and S3 stand-ins."""
    consumes = [consume_of(i) if isinstance(i, tuple) else i for i in inputs]
    plan = builtin(plan_name)
    config = SimpleNamespace(
        plan=projected(plan),
        s3=None,
        schemas=input_schemas(plan),
        input_format="json",
        max_record_bytes=MAX_RECORD_BYTES,
    )
    monkeypatch.setattr(loop, "KafkaSource", lambda config: FakeSource(config, list(consumes)))
    monkeypatch.setattr(loop, "KafkaSink", lambda config: FakeSink())
    monkeypatch.setattr(loop, "SnapshotStore", lambda settings: None)
    made = Worker(cast(Any, config), Metrics(), mini_batch=hold)
    made.port.read_from({(s.name, p): 0 for s in plan.inputs for p in range(PARTITIONS)})
    return made


def sink_of(worker: Worker) -> FakeSink:
    return cast(FakeSink, worker.sink)


def source_of(worker: Worker) -> FakeSource:
    return cast(FakeSource, worker.source)
