"""The worker loop: consume, feed the `Instance`, produce in transactions, snapshot, obey commands.

One thread owns Kafka and the engine; the control API hands it `Command`s through a queue, so
every state change happens between two loop iterations. Exactly-once output rests on one rule:
the output of every poll made after feeding exactly the positions `G` is committed in the same
transaction as `G` (the group offsets). A worker that (re)starts restores, per partition, the
snapshot covering the most input (positions `C <= G`), replays `C..G` with its output suppressed
(it is committed already: the engine's results are a function of the positions fed), then runs
live. Output is committed `output_commit_interval_s` after the last commit, input positions
alone every `commit_interval_s`; the regular commits run on the sink's commit thread while the
loop goes on (`KafkaSink.start_commit`). Snapshots are taken right after a commit the loop
waited for, so they never cover input whose output is not committed, and uploaded by a
background thread.

A step that read records may leave its work for later (`runner.MINI_BATCH`, Flink SQL's
mini-batch): it holds the records read, undecoded (`Consumes`), until 32,768 records were read
since the last poll or 100 ms passed; then each position's held records are decoded in one call,
fed in one `Instance.feed` and the pipeline runs once, so the costs per call of the decode, the
feed and the pipeline (each operator's numpy calls, a join's release, the results' encoding)
are paid per held batch, not per consume and position (a worker's light load reads a few
hundred records a consume). Held records are read, not consumed: `consumed` (what a commit
covers, what a read-back or a replay's end looks at) moves when they are decoded and fed; the
lag counts them read (`read_to`), and the load counts them in the step that read them, the
decode's CPU in the step that does it (`load`). Nothing reads a held instance: `flush` decodes,
feeds and polls first, and it is called in the one place each reader passes, before every
command (control actions, the protocols' role actions, a snapshot, stop), every commit (so a
commit's positions `G` come with the output of a poll after feeding `G`, as unheld), a step
that read nothing (an idle source), and every step while a replay, a split output
(`published`) or a migration role not done reads the input, the output or the watermark as of
each consume (the roles see decoded batches, `Role.on_input`: a done target's, when the hold
decodes). Output, dead letters (each poll's in the order decoding consume by consume gives
them) and the read-back index (`starts`, an entry per consume) are the same, up to 100 ms
later.
"""

from __future__ import annotations

import functools
import logging
import queue
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter
from streamshift_engine.migration.role import Role
from streamshift_engine.runner import MINI_BATCH, Hold, Instance
from streamshift_engine.runtime import cpu_quota, recovery
from streamshift_engine.runtime.config import WorkerConfig
from streamshift_engine.runtime.load import Load
from streamshift_engine.runtime.manifest import Manifest
from streamshift_engine.runtime.metrics import Metrics
from streamshift_engine.runtime.outage import CommitStuck
from streamshift_engine.runtime.port import WorkerPort
from streamshift_engine.runtime.published import Published
from streamshift_engine.runtime.sink import KafkaSink
from streamshift_engine.runtime.snapshots import SnapshotFailed, SnapshotStore
from streamshift_engine.runtime.source import Consumes, KafkaSource, Position

log = logging.getLogger("streamshift.worker")
# per position, the fetched batches' starts with the largest event time read up to each
# batch's end (`WorkerPort.read_back_offsets`), at most this many
STARTS_KEPT = 20000
STEP_S = 0.05  # a step's consume waits for input up to this long (a `submit` ends it early)


@dataclass
class Command:
    """An action for the worker thread; its result or error lands in `future`. A `current`
    one runs at once (the step's consume woken) on an instance up to date (what steps held fed
    and polled first); one that only reads (`current=False`, a status) is answered after the
    step, from the instance as last polled, and so costs a light load no extra poll."""

    action: Callable[[Worker], Any]
    future: Future[Any] = field(default_factory=Future)
    current: bool = True


class Worker:
    """One engine instance fed from Kafka, writing to Kafka and snapshotting to S3."""

    def __init__(
        self, config: WorkerConfig, metrics: Metrics, mini_batch: Hold | None = MINI_BATCH
    ) -> None:
        self.config = config
        self.metrics = metrics
        self.store = SnapshotStore(config.s3)
        self.source = KafkaSource(config)
        self.sink = KafkaSink(config)
        self.instance = Instance(config.plan, set())
        self.consumed: dict[Position, int] = {}
        self.limit: dict[Position, int] = {}
        self.emitted_below: dict[int, int | None] = {}
        self.published: Published | None = None  # what the output holds (after a split hand-off)
        self.restored_from: float | None = None  # when the restored snapshots were taken
        self.markers: dict[Position, int] = {}
        self.commands: queue.Queue[Command] = queue.Queue()
        self.deferred: list[Callable[[], None]] = []  # `later`
        self.on_commit: list[Callable[[], None]] = []  # called after each commit (`CommitWatch`)
        self.uploads = ThreadPoolExecutor(1, thread_name_prefix="snapshot")
        self.upload: Future[Manifest] | None = None
        self.last_snapshot: Manifest | None = None
        self.ready = False
        self.stopping = False
        self.dirty = False
        self.started = time.time()
        self.counts = {"events_in": 0, "results_out": 0, "dead_letters": 0, "snapshots_failed": 0}
        self.lag = 0
        self.load = Load(metrics, quota_cores=cpu_quota.cores())
        self.committed_watermark: int | None = None  # what the committed output reflects
        self._phase = "running"
        self.metrics.set_phase(self._phase)
        self.roles: dict[str, Role] = {}  # by migration: the protocols' parts on this worker
        self.port = WorkerPort(self)
        self.starts: dict[Position, list[tuple[int, int]]] = {}
        self.mini_batch = mini_batch
        self.held = Consumes()  # records read and not yet decoded (module docstring)
        self.pending = False  # records read, or dead letters read, since the last poll
        self.pending_records = 0  # records read since the last poll
        self.pending_letters: list[DeadLetter] = []
        self.polled_at = time.monotonic()

    @property
    def phase(self) -> str:
        """What the worker is doing (running, replaying, a migration step); the
        `streamshift_migration_phase` gauge follows it."""
        return self._phase

    @phase.setter
    def phase(self, value: str) -> None:
        if value != self._phase:  # roles report their phase every step
            self._phase = value
            self.metrics.set_phase(value)

    def run(self) -> None:
        """Warm up, recover (unless holding for a migration), and loop until stopped: ready
        (`/readyz`) from then on."""
        warm_up()
        self.store.ensure_bucket()
        if not self.config.hold:
            recovery.adopt(self, self.config.partitions)
        else:
            self.phase = "holding"
        self.ready = True
        last_commit = last_snapshot = last_lag = time.monotonic()
        while not self.stopping:
            self._commands()
            self.step(timeout=self.step_wait())
            self._catch_up()
            now = time.monotonic()
            settled = self.sink.settle(wait=False)
            if settled and now - last_commit >= self.commit_due() and not self.limit:
                last_commit = now
                due = now - last_snapshot >= self.config.snapshot_interval_s
                # a snapshot covers committed input only, and none while the output is split
                if due and not self.taking_over() and not self.splitting():
                    self.commit()
                    self.snapshot_async(None, None)
                    last_snapshot = now
                else:
                    self.commit_in_background()
            if now - last_lag >= 1.0:
                self.lag = self.load.sample_source(self.source, self.read_to())
                self.metrics.lag.set(self.lag)
                last_lag = now
        self.uploads.shutdown(wait=True)
        self.sink.close()
        self.held = Consumes()  # read after the final commit: its records must not hold `close`
        self.source.close()

    def commit_due(self) -> float:
        """Seconds between commits: short once output waits to become visible (its latency
        to a `read_committed` reader) or while a parallel-track target follows this origin's
        committed watermark (its held results wait for this origin's next commit: at the long
        interval they came up to 0.5 s late, a gap in the output); longer when only input
        positions would move on."""
        config = self.config
        short = self.dirty or any(role.prompt_commits() for role in self.active_roles())
        return config.output_commit_interval_s if short else config.commit_interval_s

    def _commands(self) -> None:
        """Run the queued commands, one after another, no step between them; a held poll runs
        before the first `current` one (`Command`)."""
        while True:
            try:
                command = self.commands.get_nowait()
            except queue.Empty:
                return
            if command.current:
                self.flush()
            try:
                command.future.set_result(command.action(self))
            except CommitStuck as error:  # the caller sees it, and the worker exits (`outage`)
                command.future.set_exception(error)
                raise
            except Exception as error:  # the caller sees it; the loop keeps running
                command.future.set_exception(error)
            self._catch_up()

    def submit(self, command: Command) -> None:
        """Queue `command` for this thread (from any thread); a `current` one ends the step's
        consume waiting for input, so it runs now rather than after the step's wait."""
        self.commands.put(command)
        if command.current:
            self.source.wake()

    def later(self, work: Callable[[], None]) -> None:
        """Run `work` on this thread once the current command has answered (or the current
        step ended), before anything else: for work an answer need not wait for."""
        self.deferred.append(work)

    def _catch_up(self) -> None:
        while self.deferred:
            self.deferred.pop(0)()

    def step(self, timeout: float) -> None:
        """One batched consume, decoded, fed and polled unless held (module docstring); output
        queued unless it is replayed output. Busy time is the step's less the consume's wait
        for input, and its CPU time the loop thread's (the wait takes none) (`load`): the
        records read count in the step that read them, a held decode's CPU in the step that
        decodes."""
        begin, cpu = time.perf_counter(), time.thread_time()
        fetched = self.source.read(timeout)
        records = sum(len(offsets) for offsets, _ in fetched.values())  # Kafka records
        if not self.held.follows(fetched):  # a position read again from further back
            self._decode_held()
        self.held.add(fetched)
        self.pending_records += records
        self.pending = True
        if not self._holds(records):
            self._decode_held(stepping=True)
            self._poll()
        busy = time.perf_counter() - begin - self.source.waited
        self.load.stepped(busy, records, time.thread_time() - cpu)

    def read_to(self) -> dict[Position, int]:
        """Per position, the event offset after the last record read: `consumed`, or past it
        the held records' (for the lag: they are read, decoded within the hold's 100 ms)."""
        read = dict(self.consumed)
        for position, end in self.held.ends(self.source.slots).items():
            if position in read:
                read[position] = max(read[position], end)
        return read

    def _decode_held(self, stepping: bool = False) -> None:
        """Decode the held records, one decode per position; the roles see the decoded batches
        (`Role.on_input`; every step's, `stepping`, also when it read none), then each
        position's are fed in one `Instance.feed`, and the dead letters read wait for the next
        poll. Late and future records' dead letters come in the order consume-by-consume
        feeding gives them (`Consumes.in_order`)."""
        held, self.held = self.held, Consumes()
        if not held and not stepping:
            return
        batches, dead = self.source.decode(held)
        for role in self.active_roles():
            batches = role.on_input(self.port, batches)
        judged = len(self.instance.dead_letters)
        for position, batch in batches.items():
            self._feed(position, batch, held.firsts(position, self.source.slots))
        if len(self.instance.dead_letters) > judged + 1:
            letters = self.instance.dead_letters
            letters[judged:] = held.in_order(letters[judged:], self.source.slots)
        dead = [d for d in dead if self._wanted((d.source, d.partition), d.offset)]
        for letter in dead:
            position = (letter.source, letter.partition)
            self.consumed[position] = max(self.consumed.get(position, 0), letter.offset + 1)
        self.pending_letters += dead

    def _holds(self, read: int) -> bool:
        """Whether this step, having read `read` records, leaves the poll for later: it read
        some, the worker may hold (`_may_hold`), and the hold is not due."""
        hold = self.mini_batch
        if hold is None or not read or not self._may_hold():
            return False
        return not hold.due(self.pending_records, time.monotonic() - self.polled_at)

    def _may_hold(self) -> bool:
        """Nothing reads the output or watermark as of each poll: no replay, no split output,
        no migration role not done."""
        if self.limit or self.published is not None:
            return False
        return all(role.done for role in self.roles.values())

    def step_wait(self) -> float:
        """How long the next step's consume waits for input (a `submit` ends it early): while
        the worker may hold, until the hold is due (its whole time with nothing held), so a
        light load's hold is read in one consume, not one per `STEP_S`, and each step's fixed
        part (the consume, the lag's and liveness' checks) is paid once per held batch; else
        `STEP_S`. The consume returns sooner once it has a batch's records."""
        hold = self.mini_batch
        if hold is None or not self._may_hold():
            return STEP_S
        if not self.held:
            return hold.seconds
        return max(0.0, hold.seconds - (time.monotonic() - self.polled_at))

    def flush(self) -> None:
        """Decode, feed and poll now what steps held (its time counts as busy, `load`)."""
        if not self.pending:
            return
        begin, cpu = time.perf_counter(), time.thread_time()
        self._decode_held()
        self._poll()
        self.load.stepped(time.perf_counter() - begin, 0, time.thread_time() - cpu)

    def _poll(self) -> None:
        """Poll the instance and queue what it answers with the dead letters read since the
        last poll; then the replay, the split output and the roles move on."""
        dead, self.pending_letters = self.pending_letters, []
        self.pending, self.pending_records, self.polled_at = False, 0, time.monotonic()
        results = self.instance.poll()
        late, self.instance.dead_letters = self.instance.dead_letters, []
        if self.published is not None:  # replayed or not, what the output lacks
            self._emit(*self.published.unpublished(results, dead + late))
        elif self.limit:
            self._emit(recovery.unseen(self, results), recovery.unseen_letters(self, dead + late))
        else:
            self._emit(results, dead + late)
        if self.limit and all(self.consumed.get(p, 0) >= o for p, o in self.limit.items()):
            recovery.end_replay(self)
        if self.published is not None and self.published.passed(
            self.instance.watermark(), self.consumed
        ):
            self.published = None
        for role in self.active_roles():
            role.after_output(self.port)
            self.phase = role.phase()

    def _wanted(self, position: Position, offset: int) -> bool:
        bound = min(self.limit.get(position, 1 << 62), self.markers.get(position, 1 << 62))
        return position in self.consumed and offset < bound

    def _feed(self, position: Position, batch: Batch, firsts: npt.NDArray[np.int64]) -> None:
        """Feed the records the worker wants of `batch`, of consumes whose first records of
        `position` were at the event offsets `firsts`: `starts` gets an entry per consume
        whose records were fed, as feeding consume by consume gives it."""
        if position not in self.consumed or not len(batch):
            return
        bound = min(self.limit.get(position, 1 << 62), self.markers.get(position, 1 << 62))
        if int(batch.offset[-1]) >= bound:
            batch = batch.take(batch.offset < bound)
            self.source.pause([position])
        if not len(batch):
            return
        self.instance.feed(position[0], position[1], batch)
        self.source.progress.fed(replaying=bool(self.limit))  # liveness: commits must follow
        starts = self.starts.setdefault(position, [])
        if len(firsts) < 2:
            reached = [int(batch.ts.max())]
            offsets = [int(batch.offset[0])]
        else:  # per consume: the first record fed and the largest event time up to its last
            cuts = np.searchsorted(batch.offset, firsts)
            cuts = np.unique(cuts[cuts < len(batch)])
            reached = np.maximum.accumulate(np.maximum.reduceat(batch.ts, cuts)).tolist()
            offsets = batch.offset[cuts].tolist()
        before = starts[-1][0] if starts else reached[0]
        starts += [(max(ts, before), offset) for ts, offset in zip(reached, offsets, strict=True)]
        if len(starts) > STARTS_KEPT:
            del starts[: len(starts) - STARTS_KEPT]
        self.consumed[position] = max(self.consumed[position], int(batch.offset[-1]) + 1)
        self.counts["events_in"] += len(batch)
        self.metrics.events_in.inc(len(batch))

    def _emit(self, results: list[ResultBatch], dead: list[DeadLetter]) -> None:
        for role in self.active_roles():
            results = role.on_output(self.port, results)
            dead = role.on_dead_letters(self.port, dead)
        self.emit_results(results)
        self.send_dead_letters(dead)

    def active_roles(self) -> list[Role]:
        """The roles whose hooks still act: every role not done, and a done target's (it
        keeps to its side of the split while it reads what its origin read)."""
        return [r for r in self.roles.values() if not r.done or r.side == "target"]

    def send_dead_letters(self, dead: list[DeadLetter]) -> None:
        """Queue dead letters in the open transaction and count them."""
        self.sink.dead_letters(dead)
        self.dirty = self.dirty or bool(dead)
        self.counts["dead_letters"] += len(dead)
        self.metrics.dead_letters.inc(len(dead))

    def emit_results(self, results: list[ResultBatch]) -> None:
        """Queue results in the open transaction and count them."""
        count = self.sink.results(results)
        self.dirty = self.dirty or bool(count)
        self.counts["results_out"] += count
        self.metrics.results_out.inc(count)
        newest = max((int(r.max_ts.max()) for r in results if len(r)), default=None)
        if newest is not None:
            self.metrics.latency.observe(max(0.0, time.time() - newest / 1000))

    def release(self, partitions: Collection[int]) -> None:
        """Hand `partitions` over: commit, then forget their state, positions and markers.
        Their state is dropped `later` (it copies what stays, which takes a while on a large state):
        the partitions are neither read nor fed from here on, so a release's answer, and with it the
        target's start, need not wait for it."""
        self.commit()
        for position in [p for p in self.consumed if p[1] in set(partitions)]:
            self.consumed.pop(position, None)
            self.markers.pop(position, None)
        self.source.release(partitions)
        self.later(lambda: self.instance.drop(partitions))
        self.phase = "released"

    def taking_over(self) -> set[int]:
        """The partitions this worker takes over as a hand-off's target but does not own yet
        (`Role.taking_over`). Their origin commits them to the query's one consumer group until
        then, so this worker's commits and snapshots leave them out: an origin recovered by a
        rollback restores its own positions, watermark and state, not a target's (which would
        skip results the origin never emitted, or emit some twice)."""
        return {p for role in self.roles.values() for p in role.taking_over()}

    def splitting(self) -> set[int]:
        """The partitions whose output a hand-off splits with a target (`Role.splitting_output`):
        commits mark them, and no snapshot is taken meanwhile (`published`)."""
        return {p for role in self.roles.values() for p in role.splitting_output()}

    def commit(self) -> None:
        """Commit the open transaction with the consumed positions it owns (`taking_over`)
        and wait for it."""
        self.commit_in_background()
        self.sink.settle()

    def commit_in_background(self) -> None:
        """Start that commit on the sink's commit thread; the loop goes on meanwhile, and what
        it produces next waits for the commit to end (`KafkaSink.start_commit`). Its end wakes
        the step's consume, so the loop settles it (`_committed`) without waiting for input.
        A held poll runs first: the positions committed come with their output."""
        self.flush()
        watermark = self.instance.watermark()
        taking = self.taking_over()
        owned = {p: o for p, o in self.consumed.items() if p[1] not in taking}
        self.dirty = False
        settled = functools.partial(self._committed, watermark)
        self.sink.start_commit(
            owned, watermark, self.source.consumer, settled, self.source.wake, self.splitting()
        )

    def _committed(self, watermark: int | None) -> None:
        self.committed_watermark = watermark
        self.source.progress.committed()
        for listener in self.on_commit:
            listener()
        self.metrics.state_bytes.set(self.instance.state_bytes())
        if watermark is not None:
            self.metrics.watermark.set(watermark)

    def snapshot_async(
        self, partitions: Collection[int] | None, migration: str | None
    ) -> Future[Manifest]:
        """Take the state now (after a commit) and upload it in the background."""
        if self.upload is not None and not self.upload.done():
            return self.upload
        self.flush()
        data = self.instance.snapshot(partitions)
        draft = recovery.draft(self, partitions, migration)
        self.upload = self.uploads.submit(self._upload, data, draft)
        return self.upload

    def _upload(self, data: bytes, draft: Manifest) -> Manifest:
        begin = time.perf_counter()
        try:
            saved = self.store.save(data, draft)
        except SnapshotFailed:
            self.counts["snapshots_failed"] += 1
            self.metrics.snapshot_failures.inc()
            log.exception("snapshot abandoned", extra={"seq": draft.seq})
            raise
        self.metrics.snapshot_seconds.observe(time.perf_counter() - begin)
        self.metrics.snapshot_bytes.set(saved.size)
        self.last_snapshot = saved
        log.info("snapshot saved", extra={"key": saved.object_key, "bytes": saved.size})
        try:  # after this upload's answer: a snapshot's caller never waits on the cleanup
            self.uploads.submit(self._retain)
        except RuntimeError:  # the worker is stopping: the next start's first upload cleans up
            log.info("retention left to the next snapshot: worker stopping")
        return saved

    def _retain(self) -> None:
        try:
            self.store.delete(recovery.expired_of(self, self.store.manifests()))
        except SnapshotFailed:
            log.warning("retention skipped: store unreachable")


def warm_up() -> None:
    """Make pyarrow's first array from numpy before the first batch: pyarrow then imports pandas
    when it is installed (about a CPU second), which would otherwise stall the worker on its
    first data, for a migration's target in the middle of the hand-off. The worker is not ready
    until then: under a CPU quota the import takes many seconds, and commands (a `/v1/status`,
    a migration's `begin`) that arrived meanwhile would wait in the queue past their callers'
    timeouts while its readiness said it answers."""
    pa.array(np.zeros(1))
