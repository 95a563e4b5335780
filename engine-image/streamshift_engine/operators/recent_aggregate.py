"""Recent aggregate: a running aggregate over each group's last `rows` records (Nexmark q6).

`running_aggregate` with `last: {rows: n, by: [fields]}`: per group, the aggregates over the `n`
latest records the group has had so far, latest meaning largest in the order `(_max_ts, *by,
ts, partition, offset)`, emitted, as `running_aggregate` does, once per group and event time at
which records of the group arrive (with `at`, after all of them). For Nexmark q6 the records are
winning bids at their auction's close and `_max_ts` is the bid's time, so the order is Beam's
`ASCENDING_TIME_THEN_PRICE` over the winning bids, not the order of the closes: a bid older than
the group's `n` kept ones drops out at once, as in Beam's `MovingMeanSellingPrice`.

The state is per group the kept records (their order key and the aggregates' inputs), at most
`n`; it grows with the groups, not with the input. Records are taken in `(ts, partition,
offset)` order. The definition is the per-record loop of `_one_by_one`: insert the record into
its group's sorted kept list, drop the oldest beyond `n`, total the list. The same lists are
found for every record of a batch at once (`_Tops`): after record `p` a group keeps the records
that came no later than `p` with fewer than `n` greater ones among them, counted pair by pair
(each of a group's kept and new records against each of its new records). Pairs grow with the
square of a group's new records, so a batch is taken in rounds of at most `VECTOR_RECORDS`
records of each group, each round reading the kept lists the one before wrote. This needs
integer orders, keys and inputs (no float sums, whose rounding depends on the order of the
additions) whose `n`-sums fit int64, and orders that differ within a group; otherwise, for the
batch or the group, the loop runs.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.grouping import group
from streamshift_engine.operators.running_aggregate import AT
from streamshift_engine.operators.stream import MAX_TS, MIN_TS, max_ts, min_ts, stream
from streamshift_engine.state.stores import KeyedRecordStore
from streamshift_engine.windows.aggregates import (
    AggregateSpec,
    finalize,
    partial_names,
    raw_inputs,
)
from streamshift_engine.windows.record_windows import Layout, layout, python_column

_REDUCE: dict[str, Callable[[Iterable[Any]], Any]] = {"n": sum, "sum": sum, "min": min, "max": max}
_INT64_MAX = int(np.iinfo(np.int64).max)
VECTOR_RECORDS = 32
"""The most records of one group a round takes (`_Tops`: a group's pairs grow with the square of
its records in the round; more rounds cost more numpy calls)."""

Emitted = dict[tuple[int, Any, int], tuple[int, tuple[Any, ...]]]
"""Per (partition, key, ts): the batch index of its last record and the totals after it."""


class RecentAggregate(Operator):
    """Per `group_by` key, the aggregates over its last `rows` records, emitted on each change."""

    def __init__(
        self,
        node_id: str,
        group_by: Sequence[str],
        aggregates: Sequence[AggregateSpec],
        keyed: bool,
        rows: int,
        by: Sequence[str],
    ) -> None:
        super().__init__(node_id, keyed)
        self.group_by = tuple(group_by)
        self.aggregates = tuple(aggregates)
        self.partials = partial_names(self.aggregates)
        self.reducers = [_REDUCE[name.split(":", 1)[0]] for name in self.partials]
        self.rows = rows
        self.by = tuple(by)
        self.kept = KeyedRecordStore(("order", "inputs"))
        self.stores = {"kept": self.kept}

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        batch = batch.take(np.lexsort((batch.offset, batch.partition, batch.ts)))
        partition = self.state_partition(batch)
        inputs = raw_inputs(self.partials, batch.columns, min_ts(batch), max_ts(batch))
        order_columns = [
            max_ts(batch),
            *(batch.columns[name] for name in self.by),
            batch.ts,
            batch.partition,
            batch.offset,
        ]
        keys = [batch.columns[name] for name in self.group_by]
        if not all(map(_int64_exact, [*order_columns, *keys, *inputs.values()])):
            return [self._output(batch, *self._one_by_one(batch, np.arange(len(batch))))]
        grouping = group([partition, *keys])
        first = grouping.first
        group_keys = list(zip(*(k[first].tolist() for k in keys), strict=True))
        kepts: list[list[tuple[Any, ...]]] = [[]] * grouping.count
        for code in np.argsort(first, kind="stable").tolist():  # state created in record order
            kepts[code] = self.kept.records(int(partition[first[code]]), group_keys[code])
        by_group = grouping.order
        codes = grouping.codes
        within = np.empty(len(batch), np.intp)
        within[by_group] = np.arange(len(batch)) - grouping.starts[codes[by_group]]
        emit = np.zeros(len(batch), dtype=bool)  # the last record of each (group, ts) run
        ts = batch.ts[by_group]
        ends = np.ones(len(batch), dtype=bool)
        ends[:-1] = (codes[by_group][1:] != codes[by_group][:-1]) | (ts[1:] != ts[:-1])
        emit[by_group[ends]] = True
        found = []
        for step in range(int(within.max()) // VECTOR_RECORDS + 1):
            rows = np.flatnonzero(within // VECTOR_RECORDS == step)
            emitted, partials = self._round(batch, rows, codes, kepts, inputs, order_columns)
            wanted = emit[emitted]
            found.append((emitted[wanted], {n: c[wanted] for n, c in partials.items()}))
        return [self._output(batch, *_merged(found, self.partials))]

    def _round(
        self,
        batch: Batch,
        rows: npt.NDArray[np.intp],
        codes: npt.NDArray[np.int64],
        kepts: list[list[tuple[Any, ...]]],
        inputs: dict[str, npt.NDArray[Any]],
        order_columns: list[npt.NDArray[Any]],
    ) -> tuple[npt.NDArray[np.int64], dict[str, npt.NDArray[Any]]]:
        """The batch's records at `rows` (in batch order, at most `VECTOR_RECORDS` of a group),
        taken after the kept lists `kepts` (per group code of `codes`), which they update: the
        records and the totals after each."""
        present, local = np.unique(codes[rows], return_inverse=True)
        grouping = group([local])
        lists = [kepts[code] for code in present.tolist()]
        lay = layout(grouping, np.array([len(k) for k in lists], np.intp))
        held = [record for kept in lists for record in kept]
        pooled = {
            name: lay.gather([v[index] for _, v in held], inputs[name][rows].astype(np.int64))
            for index, name in enumerate(self.partials)
        }
        if any(
            max(int(column.max()), -int(column.min())) > _INT64_MAX // self.rows
            for column in pooled.values()
        ):
            return self._one_by_one(batch, rows)
        orders = [
            lay.gather([o[index] for o, _ in held], column[rows])
            for index, column in enumerate(order_columns)
        ]
        tops = _Tops(lay, [*orders, *pooled.values()], grouping.sizes, self.rows)
        new = np.flatnonzero(~lay.held)
        partials = tops.totals(new, pooled)
        self._keep(tops, lists, held, [c[rows] for c in order_columns], inputs, rows)
        return rows[lay.source[new]], partials

    def _keep(
        self,
        tops: _Tops,
        lists: list[list[tuple[Any, ...]]],
        held: list[tuple[Any, ...]],
        orders: list[npt.NDArray[Any]],
        inputs: dict[str, npt.NDArray[Any]],
        rows: npt.NDArray[np.intp],
    ) -> None:
        """Each group's kept list: its top `rows` after its last record, in order, each record
        as `_one_by_one` stores it (the held ones the same tuples). `orders` are the round's
        records' order columns."""
        lay = tops.lay
        at = tops.by_rank[tops.kept[tops.by_rank]]
        source, is_held = lay.source[at].tolist(), lay.held[at].tolist()
        new_rows = lay.source[at][~lay.held[at]]
        made = iter(
            zip(
                zip(*(c[new_rows].tolist() for c in orders), strict=True),
                zip(
                    *(inputs[name][rows[new_rows]].tolist() for name in self.partials),
                    strict=True,
                ),
                strict=True,
            )
        )
        records = [held[s] if h else next(made) for s, h in zip(source, is_held, strict=True)]
        bounds = np.cumsum(np.bincount(lay.group[at], minlength=len(lists))).tolist()
        for code, kept in enumerate(lists):
            kept[:] = records[bounds[code - 1] if code else 0 : bounds[code]]

    def _one_by_one(
        self, batch: Batch, indices: npt.NDArray[Any]
    ) -> tuple[npt.NDArray[np.int64], dict[str, npt.NDArray[Any]]]:
        """The records at `indices` (in batch order) taken one by one, as the module docstring
        defines: the emitted rows, in batch order, and their partials."""
        partitions = self.state_partition(batch)[indices].tolist()
        keys = zip(*(batch.columns[name][indices].tolist() for name in self.group_by), strict=True)
        inputs = raw_inputs(self.partials, batch.columns, min_ts(batch), max_ts(batch))
        values = zip(*(inputs[name][indices].tolist() for name in self.partials), strict=True)
        orders = zip(
            max_ts(batch)[indices].tolist(),
            *(batch.columns[name][indices].tolist() for name in self.by),
            batch.ts[indices].tolist(),
            batch.partition[indices].tolist(),
            batch.offset[indices].tolist(),
            strict=True,
        )
        times = batch.ts[indices].tolist()
        emitted: Emitted = {}
        for index, partition, key, order, value, time in zip(
            indices.tolist(), partitions, keys, orders, values, times, strict=True
        ):
            kept = self.kept.records(partition, key)
            bisect.insort(kept, (order, value))
            if len(kept) > self.rows:
                del kept[0]
            emitted[(partition, key, time)] = (index, self._totals(kept))
        last = sorted(emitted.values())
        totals = list(zip(*(total for _, total in last), strict=True)) or [()] * len(self.partials)
        partials = {
            name: python_column(list(column))
            for name, column in zip(self.partials, totals, strict=True)
        }
        return np.array([index for index, _ in last], np.int64), partials

    def _totals(self, kept: list[tuple[Any, ...]]) -> tuple[Any, ...]:
        columns = zip(*[value for _, value in kept], strict=True)
        return tuple(
            [reduce(column) for reduce, column in zip(self.reducers, columns, strict=True)]
        )

    def _output(
        self, batch: Batch, rows: npt.NDArray[np.int64], partials: dict[str, npt.NDArray[Any]]
    ) -> Batch:
        """One record per (group, ts), at the last record of the run, in batch order."""
        columns = {name: batch.columns[name][rows] for name in self.group_by}
        columns[AT] = batch.ts[rows]
        columns.update(finalize(self.aggregates, partials))
        columns[MIN_TS] = np.asarray(partials["min:_ts"], np.int64)
        columns[MAX_TS] = np.asarray(partials["max:_ts"], np.int64)
        return stream(self.id, batch.ts[rows], batch.partition[rows], columns)


class _Tops:
    """Which records each new record's group keeps after it: per layout block (a group's held
    records, then its new ones in batch order), element `e` is kept after new record `p` when it
    came no later than `p` and fewer than `rows` of the records up to `p` are greater than it in
    the order. Counted pair by pair: `e`'s greater held records, plus a running count over the
    block's new records; `(held + new) * new` pairs a block. Records are ranked by `keys` (the
    order, then the inputs: the kept tuples' order), equal ones by their place in the block
    (held first, then new by arrival), as `bisect.insort` places an equal tuple after the
    others; equal tuples are interchangeable in the totals and in the kept lists."""

    def __init__(
        self, lay: Layout, keys: list[npt.NDArray[Any]], counts: npt.NDArray[np.intp], rows: int
    ) -> None:
        self.lay = lay
        groups = lay.group
        self.by_rank = np.lexsort((*reversed(keys), groups))
        rank = np.empty(len(groups), np.intp)
        rank[self.by_rank] = np.arange(len(groups))
        held_ranked = np.cumsum(lay.held[self.by_rank])
        greater_held = np.empty(len(groups), np.int64)
        greater_held[self.by_rank] = held_ranked[lay.ends[groups[self.by_rank]] - 1] - held_ranked
        reps = counts[groups]  # pairs of each element: one per new record of its block
        starts = np.cumsum(reps) - reps
        element = np.repeat(np.arange(len(groups)), reps)
        first_new = (lay.ends - counts)[groups[element]]
        self.pair_p = first_new + np.arange(len(element)) - starts[element]
        self.pair_e = element
        running = np.cumsum(rank[self.pair_p] > rank[element])
        before = np.concatenate([[0], running])[starts]  # the running count before each segment
        count = greater_held[element] + running - before[element]
        self.member = (element <= self.pair_p) & (count < rows)
        self.kept = np.zeros(len(groups), dtype=bool)
        is_last = self.pair_p == lay.ends[groups[element]] - 1
        self.kept[element[is_last & self.member]] = True

    def totals(
        self, at: npt.NDArray[np.intp], pooled: dict[str, npt.NDArray[np.int64]]
    ) -> dict[str, npt.NDArray[np.int64]]:
        """Per partial, the total over the records kept after each new record at `at`."""
        wanted = np.zeros(len(self.lay.group), dtype=bool)
        wanted[at] = True
        picked = np.flatnonzero(wanted[self.pair_p])
        picked = picked[np.argsort(self.pair_p[picked], kind="stable")]
        p, e, member = self.pair_p[picked], self.pair_e[picked], self.member[picked]
        offsets = np.flatnonzero(np.r_[True, p[1:] != p[:-1]]) if len(p) else p
        totals = {}
        for name, column in pooled.items():
            kind = name.split(":", 1)[0]
            neutral = {"min": _INT64_MAX, "max": -_INT64_MAX - 1}.get(kind, 0)
            reduce = {"min": np.minimum, "max": np.maximum}.get(kind, np.add)
            values = np.where(member, column[e], neutral)
            totals[name] = reduce.reduceat(values, offsets) if len(p) else values[:0]
        return totals


def _merged(
    parts: list[tuple[npt.NDArray[Any], dict[str, npt.NDArray[Any]]]], names: Sequence[str]
) -> tuple[npt.NDArray[np.int64], dict[str, npt.NDArray[Any]]]:
    """Rows and their partials from `parts`, by row. Joining the parts' columns gives the dtype
    `python_column` gives all their values at once (numpy's promotion); empty parts are left out,
    their dtype being no one's."""
    rows = np.concatenate([found for found, _ in parts]).astype(np.int64)
    by_row = np.argsort(rows, kind="stable")
    merged = {}
    for name in names:
        columns = [partials[name] for _, partials in parts if len(partials[name])]
        merged[name] = (np.concatenate(columns) if columns else np.empty(0, np.int64))[by_row]
    return rows[by_row], merged


def _int64_exact(column: npt.NDArray[Any]) -> bool:
    """Whether the column holds integers that int64 holds exactly (not bools: the loop keeps
    `min` and `max` of bools as bools)."""
    return column.dtype.kind == "i" or (column.dtype.kind == "u" and column.dtype.itemsize < 8)
