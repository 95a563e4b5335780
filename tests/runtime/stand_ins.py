"""Stand-ins for a worker's Kafka source, sink and S3 (`runtime.loop`), recording what the loop
hands them, around the real engine: for tests of the loop's own rules (the mini-batch hold, the
replay's suppression) without a broker."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter
from streamshift_engine.plan import builtin
from streamshift_engine.runner import Hold, collect
from streamshift_engine.runtime import loop
from streamshift_engine.runtime.liveness import Progress
from streamshift_engine.runtime.loop import Worker
from streamshift_engine.runtime.metrics import Metrics

PARTITIONS = 2
Position = tuple[str, int]
Fetch = tuple[dict[Position, Batch], list[DeadLetter]]


@dataclass
class Committed:
    """What one commit made visible: positions, watermark, all output and dead letters so far."""

    positions: dict[Position, int]
    watermark: int | None
    results: list[str]
    letters: list[tuple[str, int, int, str]]


@dataclass
class FakeSource:
    fetches: list[Fetch]
    slots: int = 1
    waited: float = 0.0
    consumer: None = None
    progress: Progress = field(default_factory=lambda: Progress(30.0, 0.5))

    def fetch(self, timeout: float) -> Fetch:
        return self.fetches.pop(0) if self.fetches else ({}, [])

    def seek(self, positions: object) -> None:
        pass

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
    monkeypatch: pytest.MonkeyPatch, plan_name: str, inputs: list[Fetch], hold: Hold | None
) -> Worker:
    """A worker of `plan_name` reading `inputs` from offset 0 of every position, its Kafka, sink
    and S3 stand-ins."""
    monkeypatch.setattr(loop, "KafkaSource", lambda config: FakeSource(list(inputs)))
    monkeypatch.setattr(loop, "KafkaSink", lambda config: FakeSink())
    monkeypatch.setattr(loop, "SnapshotStore", lambda settings: None)
    plan = builtin(plan_name)
    config = SimpleNamespace(plan=plan, s3=None)
    made = Worker(cast(Any, config), Metrics(), mini_batch=hold)
    made.port.read_from({(s.name, p): 0 for s in plan.inputs for p in range(PARTITIONS)})
    return made


def sink_of(worker: Worker) -> FakeSink:
    return cast(FakeSink, worker.sink)
