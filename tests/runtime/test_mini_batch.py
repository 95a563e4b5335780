"""The worker's mini-batch hold (`runtime.loop`, `runner.MINI_BATCH`): a worker that holds the
records it reads undecoded and decodes, feeds and polls them later, in one decode and one feed
per position, commits, at every commit, the same positions with the same output and dead
letters, in the same order, as one that does so after every consume; an idle source, a commit,
a command and a migration role not done each see the instance up to date. Kafka, the sink and S3
are stand-ins recording what the loop hands them; the source's decoding and the engine are the
real ones."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.chained import Chained
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter, decode_json, encode_json
from streamshift_engine.migration.port import InstancePort
from streamshift_engine.migration.role import Role
from streamshift_engine.plan import builtin
from streamshift_engine.runner import Hold
from streamshift_engine.runtime import loop, roles, source
from streamshift_engine.runtime.loop import Command, Worker
from streamshift_engine.spark.seed_streams import STREAMS, SeedStreamConfig, seed_streams

from .harness import nexmark_input
from .stand_ins import (
    MAX_RECORD_BYTES,
    PARTITIONS,
    Committed,
    Consume,
    Fetch,
    Position,
    sink_of,
    worker,
)

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
                each._commands()
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


def consumes(plan_name: str, seed: int, count: int, most: int, odd: float) -> list[Consume]:
    """Nexmark input of `plan_name`'s inputs as consumes would return it: JSON records at
    Kafka offsets from 0 per position, about `odd` of them (and with `odd` the second to fourth
    of each position) malformed, oversize or late (their event time a minute before their
    slot), cut into consumes of up to `most` records per
    position, each consume's positions in a random order (some consumes read none)."""
    rng = np.random.default_rng(seed)
    plan = builtin(plan_name)
    generated = nexmark_input(count, PARTITIONS)
    queues: dict[Position, tuple[np.ndarray, list[bytes]]] = {}
    for spec in plan.inputs:
        batch = generated[spec.name]
        for partition in range(PARTITIONS):
            mine = batch.take(batch.partition == partition)
            ts = mine.ts.copy()
            kind = rng.choice(4, size=len(ts), p=[1 - odd, odd / 3, odd / 3, odd / 3])
            if odd:  # one of each kind at least
                kind[1:4] = [1, 2, 3]
            ts[kind == 3] -= 60_000  # late on its partition, but for the first records
            columns = {**mine.columns, spec.time_field: ts}
            values = encode_json(Batch(spec.name, ts, mine.partition, mine.offset, columns))
            for i in np.flatnonzero(kind == 1).tolist():
                values[i] = [b"{", b'{"wrong": 1}', b"[]"][(i - 1) % 3]
            for i in np.flatnonzero(kind == 2).tolist():
                values[i] = values[i][:-1] + b',"pad":"' + b"x" * MAX_RECORD_BYTES + b'"}'
            queues[(spec.name, partition)] = (np.arange(len(values), dtype=np.int64), values)
    result: list[Consume] = []
    at = dict.fromkeys(queues, 0)
    while any(at[p] < len(q[0]) for p, q in queues.items()):
        consume: Consume = {}
        for index in rng.permutation(len(queues)).tolist():
            position = list(queues)[index]
            offsets, values = queues[position]
            low = at[position]
            high = min(len(offsets), low + int(rng.integers(0, most + 1)))
            if high > low:
                consume[position] = (offsets[low:high], cast(Any, values[low:high]))
                at[position] = high
        result.append(consume)
    return result


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    plan_name=st.sampled_from(["nexmark-q3", "nexmark-q5"]),
    seed=st.integers(0, 2**32 - 1),
    most=st.integers(1, 80),
    odd=st.sampled_from([0.0, 0.01, 0.05]),
    hold=st.integers(1, 2_000),
    every=st.integers(2, 12),
)
def test_held_raw_records_give_what_decoding_every_consume_gives(
    monkeypatch: pytest.MonkeyPatch,
    plan_name: str,
    seed: int,
    most: int,
    odd: float,
    hold: int,
    every: int,
) -> None:
    """On random input with malformed, oversize and late records, in consumes of random sizes
    and position orders, with commits, commands and idle steps in between, a worker that holds
    its consumes undecoded gives what one that decodes and feeds each consume and holds only
    its polls gives: every commit's positions, watermark, output and dead letters (in order),
    the commands' answers, and in the end the read-back index (`starts`), the positions
    consumed, the counts and the records processed (`load`). A worker that polls every consume
    commits the same, its dead letters in another order within a commit (each poll's letters
    of records that do not decode come before those the engine judged late)."""
    inputs = consumes(plan_name, seed, 3_000, most, odd)
    rng = np.random.default_rng(seed)
    holds = (None, Hold(hold, 1e9), Hold(hold, 1e9))
    unheld, decoding, held = (worker(monkeypatch, plan_name, inputs, h) for h in holds)
    decoding_every_consume(monkeypatch, decoding)
    workers = [unheld, decoding, held]
    answers: list[list[Any]] = [[], [], []]
    for _ in range(len(inputs) + 1):  # the last step reads nothing
        action = int(rng.integers(0, every))
        for side, each in enumerate(workers):
            each.step(timeout=0.0)
            if action == 0:
                each.commit()
            elif action == 1:
                command = Command(lambda w: (w.instance.watermark(), dict(w.counts)))
                each.commands.put(command)
                each._commands()
                answers[side].append(command.future.result())
    for each in workers:
        each.commit()
    assert sink_of(held).commits == sink_of(decoding).commits
    assert answers[2] == answers[1] == answers[0]
    for each in (decoding, unheld):
        assert held.starts == each.starts and held.consumed == each.consumed
        assert held.counts == each.counts and held.load.processed == each.load.processed
    assert [in_any_order(c) for c in sink_of(held).commits] == [
        in_any_order(c) for c in sink_of(unheld).commits
    ]
    if odd:  # dead letters of every kind are there to compare
        reasons = {letter[3].split(":")[0] for letter in sink_of(held).letters_so_far}
        assert {"late", "oversize", "bad json"} <= reasons


def decoding_every_consume(monkeypatch: pytest.MonkeyPatch, made: Worker) -> None:
    """Make `made` decode and feed each consume in the step that reads it, holding only its
    polls."""
    step = made.step

    def decoding(timeout: float) -> None:
        step(timeout)
        made._decode_held()

    monkeypatch.setattr(made, "step", decoding)


def in_any_order(commit: Committed) -> Committed:
    """`commit` with its dead letters sorted."""
    return Committed(commit.positions, commit.watermark, commit.results, sorted(commit.letters))


def test_held_consumes_are_decoded_in_one_call_per_position_when_a_commit_comes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Steps that hold decode nothing and feed nothing, but count the records they read
    (`load`) and report them read for the lag (`read_to`); the commit decodes each position's
    records of all of them in one `decode_json` call, feeds them in one `Instance.feed`, and
    commits the positions after the last record read, with the read-back index's entry per
    consume."""
    inputs = consumes("nexmark-q3", 5, 2_000, 40, 0.02)[:12]
    calls: list[tuple[str, int]] = []

    def counted(name: str, records: Any, *rest: Any) -> Any:
        calls.append((name, len(records)))
        return decode_json(name, records, *rest)

    monkeypatch.setattr(source, "decode_json", counted)
    made = worker(monkeypatch, "nexmark-q3", inputs, Hold(10**9, 1e9))
    fed: list[tuple[str, int, int]] = []
    feed = made.instance.feed

    def counted_feed(name: str, partition: int, batch: Batch) -> None:
        fed.append((name, partition, len(batch)))
        feed(name, partition, batch)

    monkeypatch.setattr(made.instance, "feed", counted_feed)
    for _ in inputs:
        made.step(timeout=0.0)
    read = sum(len(offsets) for consume in inputs for offsets, _ in consume.values())
    ends = {}
    for consume in inputs:
        ends.update({p: int(offsets[-1]) + 1 for p, (offsets, _) in consume.items()})
    assert calls == [] and fed == [] and made.counts["events_in"] == 0
    assert made.load.processed == read and made.pending
    assert made.read_to() == ends and made.consumed != ends
    made.commit()
    kept = {
        p: sum(len(v) <= MAX_RECORD_BYTES for c in inputs for v in c.get(p, (0, []))[1])
        for p in ends
    }
    assert sorted(calls) == sorted((p[0], count) for p, count in kept.items())
    assert sorted((n, p) for n, p, _ in fed) == sorted(ends)
    assert sink_of(made).commits[-1].positions == ends and made.consumed == ends
    per_consume = {p: sum(p in c for c in inputs) for p in ends}
    assert {p: len(made.starts[p]) for p in ends} == per_consume
    assert not made.pending and not made.held


def test_held_consumes_reach_the_decode_as_the_lists_read_not_copied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A position read by several consumes is decoded from the lists each consume read, in
    consume order (`Chained`): no joined list touches every held record again."""
    inputs = consumes("nexmark-q3", 7, 2_000, 40, 0.0)[:12]
    handed: dict[str, Any] = {}

    def kept(name: str, records: Any, partitions: Any, *rest: Any) -> Any:
        handed[f"{name}|{int(partitions[0])}"] = records
        return decode_json(name, records, partitions, *rest)

    monkeypatch.setattr(source, "decode_json", kept)
    made = worker(monkeypatch, "nexmark-q3", inputs, Hold(10**9, 1e9))
    for _ in inputs:
        made.step(timeout=0.0)
    read = {
        f"{n}|{p}": [values for _, (_, values) in parts]
        for (n, p), parts in made.held.parts.items()
    }
    made.commit()
    assert handed.keys() == read.keys() and any(len(lists) > 1 for lists in read.values())
    for position, lists in read.items():
        records = handed[position]
        if len(lists) > 1:
            assert isinstance(records, Chained)
            assert [id(part) for part in records.parts] == [id(values) for values in lists]
        else:
            assert records is lists[0]


def test_a_command_and_an_idle_step_decode_what_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command runs on an instance fed with every record read, and a step that reads nothing
    decodes, feeds and polls what earlier steps held."""
    inputs = consumes("nexmark-q5", 6, 2_000, 40, 0.0)[:10]
    made = worker(monkeypatch, "nexmark-q5", inputs, Hold(10**9, 1e9))
    read = sum(len(offsets) for consume in inputs for offsets, _ in consume.values())
    for _ in inputs[:5]:
        made.step(timeout=0.0)
    assert made.held and made.counts["events_in"] == 0
    command = Command(lambda w: w.counts["events_in"])
    made.commands.put(command)
    made._commands()
    first = sum(len(offsets) for consume in inputs[:5] for offsets, _ in consume.values())
    assert command.future.result() == first and not made.held
    for _ in inputs[5:]:
        made.step(timeout=0.0)
    assert made.held and made.counts["events_in"] == first
    made.step(timeout=0.0)  # reads nothing
    assert not made.held and not made.pending and made.counts["events_in"] == read


def test_a_status_read_neither_wakes_the_step_nor_decodes_what_is_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A status (`roles.status`, `Command(current=False)`), which an operator asks for every
    second, is answered from the instance as last polled: it neither ends the step's wait for
    input nor runs the held poll, so a light load pays no extra poll for it; a current command
    does both."""
    inputs = consumes("nexmark-q5", 6, 2_000, 40, 0.0)[:5]
    made = worker(monkeypatch, "nexmark-q5", inputs, Hold(10**9, 1e9))
    made.config = cast(Any, SimpleNamespace(**vars(made.config), pod_name="q-e0-0"))
    woken: list[bool] = []
    monkeypatch.setattr(made.source, "wake", lambda: woken.append(True))
    for _ in inputs:
        made.step(timeout=0.0)
    assert made.held and made.counts["events_in"] == 0
    status = Command(roles.status, current=False)
    made.submit(status)
    made._commands()
    answer = status.future.result()
    assert woken == [] and made.held and made.pending
    assert answer["counts"]["events_in"] == 0 and set(answer["offsets"].values()) == {0}
    read = sum(len(offsets) for consume in inputs for offsets, _ in consume.values())
    assert answer["load"]["processed"] == read  # read, held: the lag counts it as read
    current = Command(roles.status)
    made.submit(current)
    made._commands()
    assert woken == [True] and not made.held and not made.pending
    now = current.future.result()
    assert now["counts"]["events_in"] == read and now["offsets"] != answer["offsets"]


def test_records_held_when_the_loop_ends_are_dropped_before_the_consumer_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step after the last command (stop) may hold records: they are not committed, and the
    loop drops them before `KafkaSource.close` (which would wait for the records still held)."""
    inputs = consumes("nexmark-q5", 7, 1_000, 40, 0.0)[:3]
    made = worker(monkeypatch, "nexmark-q5", inputs, Hold(10**9, 1e9))
    settings = {"hold": True, "commit_interval_s": 1e9, "output_commit_interval_s": 1e9}
    made.config = cast(Any, SimpleNamespace(**vars(made.config), **settings))
    made.store = cast(Any, SimpleNamespace(ensure_bucket=lambda: None))
    monkeypatch.setattr(made.sink, "close", lambda: None, raising=False)
    held_at_close: list[int] = []
    monkeypatch.setattr(made.source, "close", lambda: held_at_close.append(made.held.records))
    made.commands.put(Command(lambda w: setattr(w, "stopping", True)))
    made.run()
    assert made.load.processed == sum(len(o) for o, _ in inputs[0].values())
    assert made.counts["events_in"] == 0 and held_at_close == [0]


def test_a_step_waits_for_input_until_the_hold_is_due_while_the_worker_may_hold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A light load's hold is read in one consume: with nothing held a step waits the hold's
    whole time, with records held what is left of it; `STEP_S` without a hold, in a replay or
    while a role is not done."""
    inputs = consumes("nexmark-q5", 7, 2_000, 40, 0.0)[:3]
    made = worker(monkeypatch, "nexmark-q5", inputs, Hold(10**9, 0.5))
    assert made.step_wait() == 0.5
    made.step(timeout=0.0)
    assert made.held and 0.0 < made.step_wait() < 0.5
    made.polled_at -= 1.0  # the hold is overdue
    assert made.step_wait() == 0.0
    made.limit = {("person", 0): 10}  # a replay reads the output as of each poll
    assert made.step_wait() == loop.STEP_S
    made.limit = {}
    made.roles["m"] = Watching()
    assert made.step_wait() == loop.STEP_S
    assert worker(monkeypatch, "nexmark-q5", inputs, None).step_wait() == loop.STEP_S
