"""`Instance`: a `Pipeline` plus the merge-and-watermark logic over per-partition inputs.

Ordering guarantee (docs/design/engine-api.md): records are buffered per (input, partition). Each
input has a watermark strategy (`plan.model.WatermarkSpec`, Flink's `WatermarkStrategy`): a
partition's watermark is the largest timestamp read on it minus the strategy's `delay` (bounded
out-of-orderness plus allowed lateness), never below its floor (below); the instance's watermark is
the minimum of its partitions'. A record is released only when the instance's watermark is strictly
greater than its `ts` (end of input releases everything), and released records reach the pipeline
in the order `(ts, input index, partition, offset)` (when no operator of the plan depends on the
order across partitions, the records of each partition are passed in `(ts, offset)` order without
that global sort: the results are the same, only their order within one firing may differ; when the
pipeline takes a release of several inputs at once, each record carries its place in that order as
`_rank`, and when only range and rows joins past filters read the order, the records come unsorted
and the joins order theirs by rank). A record whose `ts` is below its partition's watermark (judged
before the record) is late: it is counted and goes to `dead_letters` with reason `late`, and the
query carries on. With the strategy's `max_future`, a record more than that ahead of its
partition's watermark goes to the dead letters with reason `future` and moves nothing. Lateness is
judged per partition from that partition's records alone, so windows and joins give the same result
on any instance and in any run.

An input partition that gets no records would hold the watermark back forever. As Flink's
`withIdleness`, a partition counts as idle once marked so (`mark_idle`, for example when a
consumer finds it empty) or once its input's `idle_timeout` (the strategy's, or the instance's
for every input) seconds of `clock` passed without a record for it; idle partitions are left out
of the minimum (all idle: the watermark holds). A partition stops being idle with its next
record, and its floor becomes the watermark already used: its records below it are late (they go
to the dead letters as any late record), so windows that fired are never fed again.

With a `Hold` (`MINI_BATCH`, for example), `poll` runs the pipeline only once `Hold.records`
records were fed since its last run or `Hold.seconds` of `clock` passed, as Flink SQL's
mini-batch (`table.exec.mini-batch.size` and `allow-latency`): a poll that holds changes nothing,
so the records fed meanwhile reach the pipeline in one release, as if the input had come in
coarser slices, and the results (ids, values, order) are the same, only later. The pipeline's
cost has a part per call (its operators' numpy calls), which small polls would otherwise pay per
few records. Held records are fed records not yet released: snapshots cover them as such.

A snapshot holds the pipeline state of the chosen partitions, the watermark last used
(`released`) and, per (input, partition): `covered`, the smallest offset whose record the state
does not hold (records fed but not yet released are not in it: the next owner reads them again
from there); `max_released`, the partition's largest timestamp read before that offset (where
the next owner's judgement of lateness resumes); its floor; and `dead_lettered`, the offset after
the last record fed. Reading again from `covered` repeats the same judgements: late and future
records below `dead_lettered` already went to the dead letters and are dropped without a second
one, and the others below it with `ts` under `released` are in the state already (out of order,
released records may lie past `covered`) and are dropped too; the rest wait as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter, dead_letters_of
from streamshift_engine.operators.stream import RANK
from streamshift_engine.pipeline import Pipeline
from streamshift_engine.plan import compile
from streamshift_engine.plan.model import OperatorSpec, Plan, WatermarkSpec
from streamshift_engine.state import codec

Position = tuple[str, int]
NONE = -1
ENVELOPE = 2  # instance snapshots: the pipeline's arrays in the instance's frame (`snapshot_parts`)
LOWEST = np.iinfo(np.int64).min


@dataclass(frozen=True, slots=True)
class Hold:
    """When a poll runs the pipeline (module docstring): once this many records were fed since
    its last run, or once this many seconds passed."""

    records: int
    seconds: float

    def due(self, fed: int, waited: float) -> bool:
        """Whether the pipeline runs now, `fed` records and `waited` seconds after its last run."""
        return fed >= self.records or waited >= self.seconds


MINI_BATCH = Hold(records=32_768, seconds=0.1)
"""About six of a worker's polls (5,000 records each), the pipeline run at least every 100 ms.
The worker holds so (`runtime.loop.Worker`, its own count of the records it fed): it runs the
pipeline before anything reads the instance (a command, a commit, a migration's role), so what
it writes and commits is what it would be unheld."""


@dataclass(frozen=True, slots=True)
class _Waiting:
    """Accepted records of one partition waiting for the watermark, in `(ts, offset)` order, and
    per record the partition's largest timestamp read before it (`prior`). `prior` None: the
    records are in offset order too (an in-order batch) and each one's prior is the timestamp of
    the one before it, the first one's `first_prior`."""

    batch: Batch
    prior: npt.NDArray[np.int64] | None
    first_prior: int

    def split(self, cut: int) -> tuple[_Waiting, _Waiting | None]:
        """The first `cut` records and the rest (None when none are left)."""
        if cut == len(self.batch):
            return self, None
        head, tail = self.batch.take(slice(0, cut)), self.batch.take(slice(cut, None))
        if self.prior is None:
            return _Waiting(head, None, self.first_prior), _Waiting(tail, None, int(head.ts[-1]))
        return (
            _Waiting(head, self.prior[:cut], self.first_prior),
            _Waiting(tail, self.prior[cut:], self.first_prior),
        )

    def priors(self) -> npt.NDArray[np.int64]:
        """Per record, the partition's largest timestamp read before it."""
        if self.prior is not None:
            return self.prior
        prior = np.empty(len(self.batch), np.int64)
        prior[0] = self.first_prior
        prior[1:] = self.batch.ts[:-1]
        return prior

    def lowest(self) -> tuple[int, int]:
        """The smallest offset and the partition's largest timestamp read before it."""
        if self.prior is None:
            return int(self.batch.offset[0]), self.first_prior
        i = int(np.argmin(self.batch.offset))
        return int(self.batch.offset[i]), int(self.prior[i])

    def after_highest(self) -> tuple[int, int]:
        """The offset after the largest one and the partition's largest timestamp read up to it."""
        if self.prior is None:
            return int(self.batch.offset[-1]) + 1, int(self.batch.ts[-1])
        i = int(np.argmax(self.batch.offset))
        return int(self.batch.offset[i]) + 1, max(int(self.prior[i]), int(self.batch.ts[i]))


class Instance:
    """One engine instance: feed batches per (input, partition), poll results."""

    def __init__(
        self,
        plan: Plan,
        partitions: Collection[int] | None = None,
        idle_timeout: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        hold: Hold | None = None,
    ) -> None:
        self.plan = plan
        self.hold = hold
        self.pipeline: Pipeline = compile(plan)
        self.input_names = [spec.name for spec in plan.inputs]
        self.strategies = {spec.name: spec.watermark for spec in plan.inputs}
        self.assigned = None if partitions is None else set(partitions)
        self.buffers: dict[Position, list[_Waiting]] = {}
        self.max_read: dict[Position, int] = {}
        self.max_released: dict[Position, int] = {}
        self.fed_to: dict[Position, int] = {}
        self.covered_to: dict[Position, int] = {}
        self.released_to: dict[Position, tuple[int, int]] = {}
        self.dead_lettered_to: dict[Position, int] = {}
        self.floor: dict[Position, int] = {}
        self.replay: dict[Position, tuple[int, int]] = {}
        self.dead_letters: list[DeadLetter] = []
        self.counters = {
            "records_in": 0,
            "records_processed": 0,
            "late": 0,
            "future": 0,
            "results": 0,
        }
        self.interleave = any(_symmetric_join(op) for op in plan.operators)
        self.ordered = self.interleave or any(_order_sensitive(plan, op) for op in plan.operators)
        if self.ordered and any(op.type == "union" for op in plan.operators):
            self.interleave = True  # what follows a union takes its inputs in one merge order
        self.ranks_suffice = _ranks_suffice(plan)
        self.idle_timeouts = {
            spec.name: spec.watermark.idle_timeout if idle_timeout is None else idle_timeout
            for spec in plan.inputs
        }
        self.clock = clock
        self.started = clock()
        self.last_fed: dict[Position, float] = {}
        self.marked_idle: set[Position] = set()
        self.released: int | None = None
        self.ran_at = self.started
        self.ran_with = 0  # records_in when the pipeline last ran

    def feed(self, input_name: str, partition: int, batch: Batch) -> None:
        """Records of one input partition, in offset (arrival) order. A worker feeds every
        (input, partition) of every consume: the in-order case reads the batch's ends as
        Python integers and checks the order with one numpy comparison."""
        ts = batch.ts
        count = len(ts)
        if count == 0:
            return
        position = (input_name, partition)
        if self._idle(position) and self.released is not None:
            self.floor[position] = max(self.floor.get(position, self.released), self.released)
        self.marked_idle.discard(position)
        self.last_fed[position] = self.clock()
        self.fed_to[position] = int(batch.offset[-1]) + 1
        strategy = self.strategies[input_name]
        previous = self.max_read.get(position)
        first = int(ts[0])
        start = first if previous is None else previous
        floor = self.floor.get(position, LOWEST)
        in_order = (
            first >= start
            and first >= floor
            and position not in self.replay
            and (count == 1 or bool((ts[1:] >= ts[:-1]).all()))
            and (strategy.max_future is None or not _jumps(strategy, ts, start, floor))
        )
        if in_order:
            self.counters["records_in"] += count
            self.max_read[position] = int(ts[-1])
            waiting = self.buffers.get(position)
            if waiting is None:
                self.buffers[position] = [_Waiting(batch, None, start)]
            else:
                waiting.append(_Waiting(batch, None, start))
            return
        self._feed_out_of_order(position, batch, start, floor)

    def _feed_out_of_order(self, position: Position, batch: Batch, start: int, floor: int) -> None:
        """Judge each record against its partition's watermark before it: late, future (moves
        nothing) or accepted; accepted records wait sorted by `(ts, offset)`."""
        strategy = self.strategies[position[0]]
        ts = batch.ts
        floors = np.full(len(ts), floor, np.int64)
        replay_to, replay_released = self.replay.get(position, (0, LOWEST))
        replaying = batch.offset < replay_to
        floors[~replaying] = max(floor, replay_released)
        future = np.zeros(len(ts), dtype=bool)
        while True:
            prior = np.empty(len(ts), np.int64)
            prior[0] = start
            prior[1:] = np.maximum(np.maximum.accumulate(np.where(future, LOWEST, ts))[:-1], start)
            watermark = np.maximum(prior - strategy.delay, floors)
            if strategy.max_future is None:
                break
            ahead = (ts > watermark + strategy.max_future) & ~future
            if not ahead.any():
                break
            future |= ahead  # later records' watermarks only fall with these left out
        late = (ts < watermark) & ~future
        handled = batch.offset < self.dead_lettered_to.get(position, 0)
        for reason, judged in (("late", late), ("future", future)):
            if judged.any():
                self._dead(batch.take(judged & ~handled), reason)
        accepted = ~(late | future)
        self.max_read[position] = max(start, int(np.max(np.where(future, LOWEST, ts))))
        if position in self.replay and int(batch.offset[-1]) + 1 >= replay_to:
            self.floor[position] = max(floor, replay_released)  # past the records read again
            del self.replay[position]
        kept = accepted & ~(replaying & (ts < replay_released))  # the others: in the state
        in_state = np.flatnonzero(accepted & ~kept)
        if len(in_state):
            i = int(in_state[-1])
            passed = (int(batch.offset[i]) + 1, max(int(prior[i]), int(ts[i])))
            if passed[0] > self.released_to.get(position, (0, 0))[0]:
                self.released_to[position] = passed
        self.counters["records_in"] += int(np.count_nonzero(kept))
        if not kept.any():
            return
        order = np.flatnonzero(kept)
        order = order[np.argsort(ts[order], kind="stable")]
        waiting = _Waiting(batch.take(order), prior[order], start)
        self.buffers.setdefault(position, []).append(waiting)

    def _dead(self, batch: Batch, reason: str) -> None:
        self.counters[reason] += len(batch)
        self.dead_letters += dead_letters_of(batch, reason)

    def mark_idle(self, input_name: str, partition: int) -> None:
        """Leave (input, partition) out of the watermark until its next record."""
        self.marked_idle.add((input_name, partition))

    def _idle(self, position: Position) -> bool:
        if position in self.marked_idle:
            return True
        timeout = self.idle_timeouts[position[0]]
        if timeout is None:
            return False
        last = self.last_fed.get(position, self.started)
        return self.clock() - last > timeout

    def partition_watermark(self, position: Position) -> int | None:
        """The largest timestamp read on (input, partition) minus its input's delay, not below
        its floor; None before its first record."""
        largest = self.max_read.get(position)
        if largest is None:
            return None
        return max(largest - self.strategies[position[0]].delay, self.floor.get(position, LOWEST))

    def watermark(self) -> int | None:
        """Minimum over the instance's active (not idle) input partitions of their watermarks;
        when all are idle, the watermark last used."""
        if self.assigned is None:
            positions: Iterable[Position] = self.max_read
        else:
            positions = [(name, p) for name in self.input_names for p in self.assigned]
        active = [position for position in positions if not self._idle(position)]
        if not active:
            return self.released
        values = [self.partition_watermark(position) for position in active]
        if any(v is None for v in values):
            return None
        return min(v for v in values if v is not None)

    def poll(self) -> list[ResultBatch]:
        """Release what the watermark allows, then fire windows up to it (unless held)."""
        if self.hold is not None:
            now = self.clock()
            if not self.hold.due(self.counters["records_in"] - self.ran_with, now - self.ran_at):
                return []
            self.ran_at, self.ran_with = now, self.counters["records_in"]
        watermark = self.watermark()
        if watermark is None:
            return []
        self.released = max(watermark, self.released if self.released is not None else watermark)
        results = self._release(watermark)
        results += self.pipeline.advance(watermark)
        return self._count(results)

    def flush(self) -> list[ResultBatch]:
        """End of input: release everything and fire every open window."""
        results = self._release(None)
        results += self.pipeline.flush()
        return self._count(results)

    def _count(self, results: list[ResultBatch]) -> list[ResultBatch]:
        self.counters["results"] += sum(len(r) for r in results)
        return results

    def _release(self, watermark: int | None) -> list[ResultBatch]:
        released: dict[str, list[Batch]] = {}
        for position in sorted(self.buffers, key=lambda p: (self.input_names.index(p[0]), p[1])):
            waiting: list[_Waiting] = []
            ready: list[_Waiting] = []
            for pending in _coalesced(self.buffers[position]):
                cut = (
                    len(pending.batch)
                    if watermark is None
                    else int(np.searchsorted(pending.batch.ts, watermark))
                )
                if cut == 0:
                    waiting.append(pending)
                    continue
                head, tail = pending.split(cut)
                ready.append(head)
                if tail is not None:
                    waiting.append(tail)
            self.buffers[position] = waiting
            if not ready:
                continue
            self._cover(position, ready, waiting)
            parts = [r.batch for r in ready]
            if any(r.prior is not None for r in ready[1:]) and not self.ordered:
                parts = [_sorted(Batch.concat(parts))]
            released.setdefault(position[0], []).extend(parts)
        self.buffers = {p: b for p, b in self.buffers.items() if b}
        merged = {name: Batch.concat(parts) for name, parts in released.items()}
        self.counters["records_processed"] += sum(len(b) for b in merged.values())
        at_once = self.interleave and len(merged) > 1 and self.pipeline.merges
        presorted = self.ordered and not (at_once and self.ranks_suffice)
        if presorted:
            merged = {name: _sorted(batch) for name, batch in merged.items()}
        if at_once:
            return self.pipeline.process_merged(self._ranked(merged, presorted))
        results: list[ResultBatch] = []
        for batch in self._in_merge_order(merged):
            results += self.pipeline.process(batch)
        return results

    def _cover(self, position: Position, ready: list[_Waiting], waiting: list[_Waiting]) -> None:
        """After a release: the smallest offset the state does not hold, and the partition's
        largest timestamp read before it."""
        passed = max((r.after_highest() for r in ready), default=None)
        if passed is not None and passed[0] > self.released_to.get(position, (0, 0))[0]:
            self.released_to[position] = passed
        covered = self.released_to[position]
        if waiting:
            covered = min(covered, min(w.lowest() for w in waiting))
        self.covered_to[position], self.max_released[position] = covered

    def _ranked(self, merged: Mapping[str, Batch], presorted: bool) -> list[Batch]:
        """Each input's released records, in the order they came, with their place in the
        global `(ts, input index, partition, offset)` order as `_rank`, for a pipeline that
        takes them all at once. `presorted`: each input's records are in that order already
        (`_sorted`), and a stable merge by `ts` gives it."""
        names = [name for name in self.input_names if name in merged]
        bounds = np.cumsum([len(merged[n]) for n in names])[:-1]
        if presorted:
            order = np.argsort(np.concatenate([merged[n].ts for n in names]), kind="stable")
        else:
            order = _merge_order([merged[n] for n in names], bounds)
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        return [
            merged[name].with_columns({**merged[name].columns, RANK: ranks})
            for name, ranks in zip(names, np.split(rank, bounds), strict=True)
        ]

    def _in_merge_order(self, merged: Mapping[str, Batch]) -> list[Batch]:
        """Batches for the pipeline: per input when no operator needs the cross-input order,
        else runs of one input cut from the global `(ts, input index, partition, offset)` order."""
        names = [name for name in self.input_names if name in merged]
        if not self.interleave or len(names) < 2:
            return [merged[name] for name in names]
        ts = np.concatenate([merged[n].ts for n in names])
        index = np.concatenate([np.full(len(merged[n]), i) for i, n in enumerate(names)])
        partition = np.concatenate([merged[n].partition for n in names])
        offset = np.concatenate([merged[n].offset for n in names])
        local = np.concatenate([np.arange(len(merged[n])) for n in names])
        order = np.lexsort((offset, partition, index, ts))
        index, local = index[order], local[order]
        cuts = np.flatnonzero(np.diff(index)) + 1
        runs = []
        starts, stops = np.append(0, cuts), np.append(cuts, len(order))
        for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
            runs.append(merged[names[int(index[start])]].take(local[start:stop]))
        return runs

    def positions(self) -> dict[Position, int]:
        """Per (input, partition), the offset after the last record fed."""
        return dict(self.fed_to)

    def covered(self) -> dict[Position, int]:
        """Per (input, partition), the smallest offset whose record the state does not hold
        (every record below it is in the state or went to the dead letters)."""
        return dict(self.covered_to)

    def snapshot(self, partitions: Collection[int] | None = None) -> bytes:
        """Versioned bytes: the pipeline state of `partitions` (all when None) and the
        positions it covers."""
        return b"".join(self.snapshot_parts(partitions))

    def snapshot_parts(self, partitions: Collection[int] | None = None) -> list[bytes | memoryview]:
        """The bytes of `snapshot` in parts that view the state's arrays (no copy): for a
        sender that writes them out before the instance changes (`codec.encode_parts`).

        Envelope 2: the pipeline's arrays sit in the instance's own frame, its metadata under
        `pipeline`. Envelope 1 (older snapshots, still restored) nested the pipeline's snapshot
        bytes as one array, a copy of the whole state more on each side."""

        pipeline, arrays = self.pipeline.arrays(partitions)
        meta = {
            "kind": "instance",
            "envelope": ENVELOPE,
            "query": self.plan.name,
            **self._positions(partitions),
            "pipeline": pipeline,
        }
        return codec.encode_parts(meta, arrays)

    def _positions(self, partitions: Collection[int] | None) -> dict[str, Any]:
        """A snapshot's positions of `partitions` (all when None): where reading and judging
        resume (module docstring)."""

        def chosen(position: Position) -> bool:
            return partitions is None or position[1] in partitions

        fed = {p: max(o, self.dead_lettered_to.get(p, o)) for p, o in self.fed_to.items()}
        return {
            "covered": [[n, p, o] for (n, p), o in self.covered_to.items() if chosen((n, p))],
            "max_released": [
                [n, p, t] for (n, p), t in self.max_released.items() if chosen((n, p))
            ],
            "dead_lettered": [[n, p, o] for (n, p), o in fed.items() if chosen((n, p))],
            "floor": [[n, p, t] for (n, p), t in self.floor.items() if chosen((n, p))],
            "released": self.released,
        }

    def carry_positions(self, old: Instance, partitions: Collection[int] | None = None) -> None:
        """Take `old`'s positions of `partitions` as a restore of its snapshot would (for a
        plan change that builds the new state from the old instance rather than restoring it):
        fed again from `covered()`, the records read again are judged as `old` judged them."""
        self._adopt_positions(old._positions(partitions))

    def restore(self, data: bytes | bytearray | memoryview, adopt: bool = False) -> None:
        """Add the partitions in `data`; feed them again from `covered()` onwards. `adopt`:
        `data` is a writable buffer handed over for good, and the state's arrays stay views of
        it (no copy)."""
        if adopt and memoryview(data).readonly:
            raise ValueError("only a writable buffer can be adopted")
        meta, arrays = codec.decode(data, copy=False)
        if meta.get("kind") != "instance" or meta.get("query") != self.plan.name:
            raise codec.SnapshotError(f"not an instance snapshot of {self.plan.name!r}")
        if meta.get("envelope", 1) == 1:
            self.pipeline.restore(arrays["pipeline"].data)  # decoded (and copied) once more
        else:
            if not adopt:  # views of bytes the caller keeps: the state gets its own copies
                arrays = {n: a if a.dtype == object else a.copy() for n, a in arrays.items()}
            self.pipeline.restore_arrays(meta["pipeline"], arrays)
        self._adopt_positions(meta)

    def _adopt_positions(self, meta: Mapping[str, Any]) -> None:
        for name, partition, offset in meta["covered"]:
            self.covered_to[(name, partition)] = offset
            self.fed_to[(name, partition)] = offset
        for name, partition, ts in meta["max_released"]:
            self.max_released[(name, partition)] = ts
            self.max_read[(name, partition)] = max(ts, self.max_read.get((name, partition), ts))
            self.released_to[(name, partition)] = (self.covered_to[(name, partition)], ts)
        for name, partition, ts in meta.get("floor", []):
            self.floor[(name, partition)] = ts
        for name, partition, offset in meta.get("dead_lettered", []):
            self.dead_lettered_to[(name, partition)] = offset
            if meta.get("released") is not None:
                self.replay[(name, partition)] = (offset, meta["released"])
        released = [w for w in (self.released, meta.get("released")) if w is not None]
        self.released = max(released) if released else None

    def drop(self, partitions: Collection[int]) -> None:
        """Forget the state, buffers and positions of `partitions` (they moved elsewhere)."""
        self.pipeline.drop(partitions)
        leaving = set(partitions)
        tables = (self.buffers, self.max_read, self.max_released, self.fed_to, self.covered_to)
        others = (self.released_to, self.dead_lettered_to, self.floor, self.replay, self.last_fed)
        self.marked_idle = {p for p in self.marked_idle if p[1] not in leaving}
        for table in (*tables, *others):
            for position in [p for p in table if p[1] in leaving]:
                del table[position]
        if self.assigned is not None:
            self.assigned -= leaving

    def state_bytes(self) -> int:
        return self.pipeline.state_bytes()


COALESCE_FROM = 4
"""Waiting pieces of one partition from which a release joins them first (fewer are cut one by
one: joining copies them, which only pays when many small polls left many pieces)."""


def _coalesced(pieces: list[_Waiting]) -> list[_Waiting]:
    """The waiting pieces of one partition as one piece, so that a release cuts it once (from
    `COALESCE_FROM` pieces). Pieces fed in order, one after another, are in `(ts, offset)`
    order together (each one's `first_prior` is the last timestamp of the one before); with
    out-of-order ones among them, their records are sorted by `(ts, offset)` again, each with
    its own `prior`."""
    if len(pieces) < COALESCE_FROM:
        return pieces
    batch = Batch.concat([piece.batch for piece in pieces])
    if all(piece.prior is None for piece in pieces):
        return [_Waiting(batch, None, pieces[0].first_prior)]
    prior = np.concatenate([piece.priors() for piece in pieces])
    order = np.lexsort((batch.offset, batch.ts))
    return [_Waiting(batch.take(order), prior[order], pieces[0].first_prior)]


def _jumps(strategy: WatermarkSpec, ts: npt.NDArray[np.int64], start: int, floor: int) -> bool:
    """Whether a batch in order may hold a record past `max_future` (then it is judged record by
    record): its first record too far ahead, or a step between neighbours larger than
    `max_future - delay`."""
    assert strategy.max_future is not None
    first = int(ts[0]) - max(start - strategy.delay, floor) > strategy.max_future
    return first or bool(np.any(ts[1:] - ts[:-1] > strategy.max_future - strategy.delay))


def _order_sensitive(plan: Plan, operator: OperatorSpec) -> bool:
    """Whether an operator's output depends on the order of records across partitions (when
    none does, each input's released records go to the pipeline partition by partition). A
    stateful map keyed by the partitioning key counts within a partition, where offset order is
    the merge order; one keyed otherwise counts across partitions."""
    params = operator.params
    if operator.type == "window_aggregate":
        return bool(params["window"]["kind"] in ("rows", "session"))
    if operator.type == "topk":
        return bool(params.get("ties", "all") == "first")
    if _symmetric_join(operator):
        return True
    return operator.type == "stateful_map" and not plan.nodes[operator.id].keyed


def _ranks_suffice(plan: Plan) -> bool:
    """Whether a release is better ranked without sorting each input first (`_merge_order`):
    its records reach the pipeline's order-dependent operators only through range and rows
    joins, which take their arrivals in `_rank` order whatever order they come in, and only
    through a filter first (filters and maps keep each record and its rank). So every operator
    fed by an input through filters and maps is such a join, past at least one filter, and the
    output is not so fed. A join fed unfiltered would sort every record itself: sorting each
    input before ranking costs less then."""
    consumers: dict[str, list[OperatorSpec]] = {}
    for operator in plan.operators:
        for upstream in operator.inputs:
            consumers.setdefault(upstream, []).append(operator)
    reached = [(spec.name, False) for spec in plan.inputs]
    while reached:
        node, filtered = reached.pop()
        if node == plan.output:
            return False
        for operator in consumers.get(node, []):
            if operator.type in ("filter", "map", "project"):
                reached.append((operator.id, filtered or operator.type == "filter"))
            elif not (filtered and _symmetric_join(operator)):
                return False
    return True


def _symmetric_join(operator: OperatorSpec) -> bool:
    """A range or rows join (`SymmetricJoin`: it orders its arrivals by `_rank`)."""
    return operator.type == "window_join" and operator.params["window"]["kind"] in ("range", "rows")


def _merge_order(batches: Sequence[Batch], bounds: npt.NDArray[np.int64]) -> Any:
    """The order `(ts, input index, partition, offset)` of the records of `batches` (one per
    input, in input order) taken as one sequence. When the records come in runs of one
    partition each, partitions ascending within an input, each run in `(ts, offset)` order (a
    release in order), ties in `ts` are in that order already and one stable sort by `ts` gives
    it; else a sort by the four keys. `bounds` are the indices where each input after the first
    starts."""
    ts = np.concatenate([batch.ts for batch in batches])
    partition = np.concatenate([batch.partition for batch in batches])
    offset = np.concatenate([batch.offset for batch in batches])
    in_run = (ts[1:] > ts[:-1]) | ((ts[1:] == ts[:-1]) & (offset[1:] > offset[:-1]))
    later = np.where(partition[1:] == partition[:-1], in_run, partition[1:] > partition[:-1])
    later[bounds[(bounds > 0) & (bounds < len(ts))] - 1] = True  # where an input starts
    if bool(later.all()):
        return np.argsort(ts, kind="stable")
    index = np.repeat(np.arange(len(batches)), [len(batch) for batch in batches])
    return np.lexsort((offset, partition, index, ts))


def _sorted(batch: Batch) -> Batch:
    """Records of one input in `(ts, partition, offset)` order."""
    order = np.lexsort((batch.offset, batch.partition, batch.ts))
    if np.all(order[1:] > order[:-1]):
        return batch
    return batch.take(order)


def run_plan(
    plan: Plan, inputs: Mapping[str, Sequence[Batch]], partitions: Collection[int] | None = None
) -> tuple[list[ResultBatch], Instance]:
    """The testing harness (bytewax's `run_main` over `TestingSource`s): run `plan` over recorded
    inputs, per input a list of batches (any partitions, each partition's records in offset
    order). Batches are fed round-robin over the inputs, split by partition, with a poll after
    each round and a flush at the end. The partitions default to all that occur in the input."""
    if partitions is None:
        partitions = {
            p for batches in inputs.values() for b in batches for p in b.partition.tolist()
        }
    instance = Instance(plan, partitions)
    results: list[ResultBatch] = []
    for round_batches in zip_longest(*inputs.values()):
        for name, batch in zip(inputs, round_batches, strict=True):
            if batch is None:
                continue
            for partition in np.unique(batch.partition).tolist():
                instance.feed(name, partition, batch.take(batch.partition == partition))
        results += instance.poll()
    results += instance.flush()
    return results, instance


def collect(results: Sequence[ResultBatch]) -> list[dict[str, Any]]:
    """All result records (id included), in output order."""
    return [record for batch in results for record in batch.to_records()]
