"""The worker's mini-batch hold (`runtime.loop`, `runner.MINI_BATCH`): a worker that leaves its
polls for later commits, at every commit, the same positions with the same output and dead
letters, in the same order, as one that polls after every consume; an idle source, a command
and a migration role not done each see the instance up to date. Kafka, the sink and S3 are
stand-ins recording what the loop hands them; the engine is the real one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter
from streamshift_engine.migration.port import InstancePort
from streamshift_engine.migration.role import Role
from streamshift_engine.plan import builtin
from streamshift_engine.runner import Hold
from streamshift_engine.runtime.loop import Command
from streamshift_engine.spark.seed_streams import STREAMS, SeedStreamConfig, seed_streams

from .harness import nexmark_input
from .stand_ins import PARTITIONS, Fetch, Position, sink_of, worker

GAP = 97  # every 97th Kafka offset holds a malformed record (a dead letter of the source)


def fetches(plan_name: str, count: int, seed: int) -> list[Fetch]:
    """Nexmark (or seed stream) input of `plan_name`'s inputs over `PARTITIONS` partitions, per
    position at Kafka offsets with a malformed record every `GAP`, cut into consumes of random
    sizes."""
    rng = np.random.default_rng(seed)
    names = [spec.name for spec in builtin(plan_name).inputs]
    if names[0] in STREAMS:  # a seed query's streams (`S`, `T`), each with partners in range
        generated = seed_streams(seed, 0, count, SeedStreamConfig(keys=40, partitions=PARTITIONS))
    else:
        generated = nexmark_input(count, PARTITIONS)
    queues: dict[Position, Batch] = {}
    for name in names:
        batch = generated[name]
        for partition in range(PARTITIONS):
            mine = batch.take(batch.partition == partition)
            index = np.arange(len(mine), dtype=np.int64)
            offsets = index + index // (GAP - 1)  # leaves offsets GAP-1, 2*GAP-1, ... free
            queues[(name, partition)] = Batch(name, mine.ts, mine.partition, offsets, mine.columns)
    result: list[Fetch] = []
    at = dict.fromkeys(queues, 0)
    while any(at[p] < len(b) for p, b in queues.items()):
        batches: dict[Position, Batch] = {}
        letters: list[DeadLetter] = []
        for position, batch in queues.items():
            take = int(rng.integers(0, 60))
            part = batch.take(slice(at[position], at[position] + take))
            at[position] += len(part)
            if not len(part):
                continue
            batches[position] = part
            low, high = int(part.offset[0]), int(part.offset[-1])
            letters += [
                DeadLetter(position[0], position[1], o, "malformed", b"{")
                for o in range(low, high)
                if o % GAP == GAP - 1
            ]
        result.append((batches, letters))
    return result


@pytest.mark.parametrize("plan_name", ["nexmark-q3", "nexmark-q5", "q1"])
@pytest.mark.parametrize("seed", [1, 2])
def test_a_held_worker_commits_what_an_unheld_one_commits(
    monkeypatch: pytest.MonkeyPatch, plan_name: str, seed: int
) -> None:
    """Commits at random steps, commands in between, then an idle source: every commit's
    positions, watermark, output and dead letters (in order) equal the unheld worker's, with
    fewer than half as many polls."""
    inputs = fetches(plan_name, 40_000 if plan_name == "nexmark-q3" else 12_000, seed)
    rng = np.random.default_rng(seed)
    commits = set(rng.choice(len(inputs), size=len(inputs) // 6, replace=False).tolist())
    commands = set(rng.choice(len(inputs), size=len(inputs) // 8, replace=False).tolist())
    workers = [worker(monkeypatch, plan_name, inputs, hold) for hold in (None, Hold(700, 1e9))]
    answers: list[list[Any]] = [[], []]
    for index in range(len(inputs) + 1):  # the last step reads nothing
        for side, each in enumerate(workers):
            each.step(timeout=0.0)
            if index in commands:
                command = Command(lambda w: (w.pending, w.instance.watermark(), w.counts))
                each.commands.put(command)
                each._obey()
                answers[side].append(command.future.result())
            if index in commits:
                each.commit()
    unheld, held = (sink_of(w) for w in workers)
    assert held.commits == unheld.commits and len(held.commits) >= 3
    assert answers[0] == answers[1] and all(not pending for pending, _, _ in answers[1])
    assert held.results_so_far == unheld.results_so_far and len(held.results_so_far) > 20
    assert held.letters_so_far == unheld.letters_so_far and len(held.letters_so_far) > 20
    assert not workers[1].pending  # the idle step polled
    assert held.emits < unheld.emits / 2


class Watching(Role):
    """A migration role that reads the output of every poll until done."""

    protocol = "test"
    side = "origin"

    def __init__(self) -> None:
        super().__init__("m", frozenset({0}))
        self.seen: list[int] = []

    def on_output(self, port: InstancePort, results: list[ResultBatch]) -> list[ResultBatch]:
        self.seen.append(sum(len(r) for r in results))
        return results


def test_a_role_not_done_sees_every_poll_and_a_done_one_lets_the_worker_hold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inputs = fetches("nexmark-q5", 4_000, 3)
    made = worker(monkeypatch, "nexmark-q5", inputs, Hold(10_000, 1e9))
    role = Watching()
    made.roles["m"] = role
    for _ in range(10):
        made.step(timeout=0.0)
        assert not made.pending
    assert len(role.seen) == 10
    role.done = True  # its hooks no longer read each poll: steps hold
    made.step(timeout=0.0)
    assert made.pending and len(role.seen) == 10
    made.flush()
    assert not made.pending and len(role.seen) == 10  # a done origin is no longer called
