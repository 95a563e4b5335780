"""Symmetric window joins of two inputs: purge, join, insert (seed 001 (Zhu et al., Dynamic Plan
Migration), section 2), batch-wise.

The definition is per tuple: for each arriving tuple `t` of one side (in the deterministic merge
order) the join 1) purges the other side's state, 2) joins `t` with the matching tuples left
there, oldest first, 3) inserts `t` into its own side's state. Tuples carry min/max timestamps; a
combined tuple's are the min and max over both parts (seed 001, figure 3 and section 2.4).

- `RangeJoin` (`S [Range W] join T [Range W]`): two tuples join when all their timestamps lie
  within `W` ms of each other; the other side is purged by lemma 2.2 (`t_R` goes once some left
  tuple has `min_L - max_R > W`), which never removes a tuple that can still join.
- `RowsJoin` (`[Partition By key Rows n]` on both sides): each side keeps, per join key, its last
  `n` tuples; the insert step evicts the oldest.

The join takes a whole batch at once, with both sides' records of one release interleaved
(`process_sides`: each record's place in the merge order is its `_rank`), and computes exactly
what the per-tuple loop gives, in vectorised passes: a tuple `t` of key `k` meets the other side's
tuples of `k` held before the batch, then those of the batch ranked before `t`, in that order (the
other side's list at `t` in the loop); a range join checks only those within `W` of `t`'s time
(records reach it in time order), a rows join the last `n`. Results come out in the order of the
tuples that made them. As purging never drops a tuple that can still join (every later tuple's
`ts`, its `max_ts`, is at least the purging tuple's `min_ts`), it only bounds memory: after a
batch a held tuple is gone iff some tuple of the other side and key arrived after it with
`min_ts - W` above its `max_ts`, which is what the loop leaves.

A result's `id` names its parts: the ids of the base tuples it combines, sorted and joined by
`*`, so it is the same on every instance and under every join order of the same streams (seed
001 section 3: equivalent plans give the same result set; a 3-way join is a chain of these joins).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.result_json import joined
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.grouping import group_codes
from streamshift_engine.operators.join_state import Columns, JoinState
from streamshift_engine.operators.stream import (
    MAX_TS,
    MIN_TS,
    RANK,
    WINDOW_START,
    identities,
    max_ts,
    min_ts,
    stream,
)
from streamshift_engine.state.stores import KeyedRecordStore

Record = tuple[Any, ...]
TS, MIN, MAX, IDENTITY, VALUES = 0, 1, 2, 3, 4
Index = npt.NDArray[np.int64]
INT64_MIN, INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


@dataclass(frozen=True, slots=True)
class Ahead:
    """What a window needs to pick an arriving row's partners among the other side's arriving
    rows: the arriving rows' `ts`, key codes and where their key's run starts among the other
    side's rows (sorted by key, then rank), whose codes and `ts` follow."""

    arriving_ts: Index
    code: Index
    group_start: Index
    codes: Index
    ts: Index


class SymmetricJoin(Operator):
    """Purge-join-insert over per-(partition, key) tuples; subclasses choose the window."""

    def __init__(
        self,
        node_id: str,
        sides: Sequence[str],
        on: Sequence[tuple[str, str]],
        size: int,
        side_fields: Sequence[Sequence[str]],
        side_keys: Sequence[Sequence[str]],
        keyed: bool,
    ) -> None:
        super().__init__(node_id, keyed)
        self.sides = tuple(sides)
        self.on = [[pair[0] for pair in on], [pair[1] for pair in on]]
        self.size = size
        self.side_fields = [tuple(fields) for fields in side_fields]
        self.side_keys = [tuple(keys) for keys in side_keys]
        self.state: list[KeyedRecordStore] = [
            JoinState(fields, self.on[side]) for side, fields in enumerate(self.side_fields)
        ]
        self.stores = {"left": self.state[0], "right": self.state[1]}
        self.latest_min = [INT64_MIN, INT64_MIN]

    def side(self, index: int) -> JoinState:
        """A side's state (a plan change may have put the old join's there: also a
        `JoinState`)."""
        state = self.state[index]
        assert isinstance(state, JoinState)
        return state

    def joinable(self, left: Record, right: Record) -> bool:
        """Whether two held tuples join (the per-tuple form of `_joinable`)."""
        return True

    def process(self, port: int, batch: Batch) -> list[Batch]:
        return self.process_sides([batch, None] if port == 0 else [None, batch])

    def process_sides(self, sides: Sequence[Batch | None]) -> list[Batch]:
        """Records of both sides (either may be None), ranked in the merge order by their
        `_rank` column (without one, a batch's own order): the results of taking them one by
        one, in that order."""
        arriving = [self._arrivals(side, batch) for side, batch in enumerate(sides)]
        if all(rows is None for rows in arriving):
            return []
        extended = [self.side(side).extend(arriving[side]) for side in (0, 1)]
        whole = [table for table, _ in extended]
        held = [count for _, count in extended]
        chosen = self._relevant(whole, held)
        tables = [_restricted(t, rows, h) for t, rows, h in zip(whole, chosen, held, strict=True)]
        counts = [h if rows is None else len(rows) for h, rows in zip(held, chosen, strict=True)]
        codes, groups = self._group_codes(tables)
        matches = self._matches(tables, counts, codes, groups)
        for side in (0, 1):
            table = tables[side]
            if arriving[side] is not None and table is not None:
                first = int(table["min_ts"][counts[side] :].max())
                self.latest_min[side] = max(self.latest_min[side], first)
        results = [self._results(tables, *matches)] if len(matches[0]) else []
        kept = self._kept(tables, counts, codes)
        for side in (0, 1):
            self.side(side).keep(_widened(kept[side], chosen[side], whole[side], held[side]))
        return results

    def _relevant(self, tables: list[Columns | None], held: list[int]) -> list[Index | None]:
        """Per side, the held rows whose join key some arriving row (of either side) has, or
        None for all of them. The others neither meet an arriving row nor are purged by one
        (both depend only on the arriving rows of their own key), so the batch is joined
        against these alone: its cost then follows the arrivals, not the state (an unbounded
        join's state only grows). Only for a single integer key, from `RELEVANT_FROM` held
        rows, and only when at most `RELEVANT_SHARE` of a side's held rows are relevant."""
        if len(self.on[0]) != 1 or any(t is None for t in tables) or max(held) < RELEVANT_FROM:
            return [None, None]
        keys = [t[f"v:{self.on[side][0]}"] for side, t in enumerate(tables) if t is not None]
        if any(k.dtype.kind not in "iu" for k in keys):
            return [None, None]
        arriving = np.concatenate([k[h:] for k, h in zip(keys, held, strict=True)])
        chosen: list[Index | None] = []
        for key, count in zip(keys, held, strict=True):
            if count < RELEVANT_FROM:
                chosen.append(None)
                continue
            rows = np.flatnonzero(np.isin(key[:count], arriving))
            chosen.append(rows if len(rows) <= RELEVANT_SHARE * count else None)
        return chosen

    def _arrivals(self, side: int, batch: Batch | None) -> Columns | None:
        """A batch as held tuples' columns, plus `rank` (never held)."""
        if batch is None or len(batch) == 0:
            return None
        columns = batch.columns
        rows: Columns = {
            "partition": self.state_partition(batch),
            "ts": batch.ts,
            "min_ts": min_ts(batch),
            "max_ts": max_ts(batch),
        }
        rank = columns.get(RANK)
        rows["rank"] = np.arange(len(batch), dtype=np.int64) if rank is None else rank
        if rank is not None and bool(np.any(rank[1:] < rank[:-1])):
            order = np.argsort(rank, kind="stable")
            batch = batch.take(order)
            columns = batch.columns
            rows = {name: column[order] for name, column in rows.items()}
        state = self.side(side)
        places = not self.side_keys[side] and WINDOW_START not in columns
        if places and state.place_source in (None, batch.source):
            state.place_source = batch.source
            rows["identity"] = np.full(len(batch), None, dtype=object)
            rows["place_partition"] = batch.partition.astype(np.int64)
            rows["place_offset"] = batch.offset
        if "identity" not in rows:
            texts = np.empty(len(batch), dtype=object)
            texts[:] = identities(batch, self.side_keys[side])
            rows["identity"] = texts
            rows["place_partition"] = np.full(len(batch), -1, np.int64)
            rows["place_offset"] = np.full(len(batch), -1, np.int64)
        for field in self.side_fields[side]:
            rows[f"v:{field}"] = columns[field]
        return rows

    def _group_codes(self, tables: list[Columns | None]) -> tuple[list[Index], int]:
        """Each row's (partition, join key) group, numbered alike on both sides (dense), and
        the number of groups."""
        present = [t for t in tables if t is not None]
        keys = [
            [t["partition"], *(t[f"v:{f}"] for f in self.on[side])]
            for side, t in enumerate(tables)
            if t is not None
        ]
        joined = [np.concatenate(parts) for parts in zip(*keys, strict=True)]
        codes, count = group_codes(joined)
        split = np.cumsum([_rows(t) for t in present])[:-1]
        parts = iter(np.split(codes, split))
        return [next(parts) if t is not None else np.empty(0, np.int64) for t in tables], count

    def _matches(
        self, tables: list[Columns | None], counts: list[int], codes: list[Index], groups: int
    ) -> tuple[Index, Index, Index, Index]:
        """Every (arriving tuple, partner) pair in output order: the arriving side, its row, the
        partner's row (in the other side's table) and the arriving row's rank."""
        found: list[tuple[Index, Index, Index, Index, Index]] = []
        for side in (0, 1):
            own, other = tables[side], tables[1 - side]
            if own is None or other is None or _rows(own) == counts[side]:
                continue
            found += self._partners(side, own, other, counts, codes, groups)
        if not found:
            empty = np.empty(0, np.int64)
            return empty, empty, empty, empty
        sides, row, partner, rank, later = (
            np.concatenate([pairs[i] for pairs in found]) for i in range(5)
        )
        order = _pair_order(rank, later)
        return sides[order], row[order], partner[order], rank[order]

    def _partners(
        self,
        side: int,
        own: Columns,
        other: Columns,
        counts: list[int],
        codes: list[Index],
        groups: int,
    ) -> list[tuple[Index, Index, Index, Index, Index]]:
        """The pairs of `side`'s arriving rows with the other side's held rows, then with the
        other side's arriving rows ranked before them; each pair's last element orders the
        pairs of one arriving row (held first, oldest first)."""
        start = counts[side]
        rows = np.arange(start, _rows(own), dtype=np.int64)
        code = codes[side][start:]
        rank = own["rank"][start:]
        held = counts[1 - side]
        other_codes = codes[1 - side]
        # the other side's held rows by code, oldest first
        by_code = _by_code(other_codes[:held], groups)
        held_count = np.bincount(other_codes[:held], minlength=groups)
        low = (np.cumsum(held_count) - held_count)[code]
        # the other side's arriving rows by code, then rank; how many rank ahead of each row
        later_codes = other_codes[held:]
        later_rank = other["rank"][held:] if "rank" in other else np.empty(0, np.int64)
        by_rank = _by_code(later_codes, groups)  # arrivals come in rank order
        later_count = np.bincount(later_codes, minlength=groups)
        group_start = (np.cumsum(later_count) - later_count)[code]
        before = _ahead(code, rank, later_codes, later_rank, groups) - group_start
        held_from, held_to, later_from = self._candidates(
            held_count[code],
            before,
            Ahead(
                own["ts"][start:],
                code,
                group_start,
                later_codes[by_rank],
                other["ts"][held:][by_rank],
            ),
        )
        pairs = []
        held_rows = by_code.astype(np.int64)
        later_rows = held + by_rank.astype(np.int64)
        for kind, first, last, among in (
            (0, low + held_from, low + held_to, held_rows),
            (1, group_start + later_from, group_start + before, later_rows),
        ):
            count = np.maximum(last - first, 0)
            total = int(count.sum())
            if total == 0:
                continue
            which = np.repeat(np.arange(len(rows)), count)
            step = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
            partner = among[np.repeat(first, count) + step]
            row = rows[which]
            fit = self._joinable(own, row, other, partner)
            # held partners oldest first, then arriving ones in rank order
            after = partner + kind * _rows(other)
            pairs.append(
                (
                    np.full(int(fit.sum()), side),
                    row[fit],
                    partner[fit],
                    rank[which][fit],
                    after[fit],
                )
            )
        return pairs

    def _candidates(self, held: Index, before: Index, ahead: Ahead) -> tuple[Index, Index, Index]:
        """Per arriving row, which of the other side's tuples it meets: held ones
        `[from, to)` (of the `held` of its key, oldest first) and arriving ones from
        `later_from` on (of the `before` of its key ranked ahead of it). All, by default."""
        zero = np.zeros(len(held), np.int64)
        return zero, held, zero

    def _joinable(self, own: Columns, row: Index, other: Columns, partner: Index) -> Any:
        return np.ones(len(row), dtype=bool)

    def _kept(self, tables: list[Columns | None], counts: list[int], codes: list[Index]) -> Any:
        """Per side, the rows its state keeps after the batch (all, by default)."""
        return [None, None]

    def _ids(self, tables: list[Columns | None], at: list[Index]) -> Any:
        """The combined ids of the pairs: formatted from the integers when both parts are
        input places of different sources (whose order is that of `source@`), else part by
        part."""
        left, right = tables
        assert left is not None and right is not None
        states = [self.side(0), self.side(1)]
        places = [
            state.places(table, rows)
            for state, table, rows in zip(states, (left, right), at, strict=True)
        ]
        one, two = places
        if one is not None and two is not None and one[0] != two[0]:
            return (
                _place_pair_ids(one, two)
                if f"{one[0]}@" < f"{two[0]}@"
                else _place_pair_ids(two, one)
            )
        texts = [
            state.identities(table, rows)
            for state, table, rows in zip(states, (left, right), at, strict=True)
        ]
        ids = np.empty(len(at[0]), dtype=object)
        ids[:] = [combined(a, b) for a, b in zip(*texts, strict=True)]
        return ids

    def _results(
        self, tables: list[Columns | None], side: Index, row: Index, partner: Index, rank: Index
    ) -> Batch:
        """The combined tuples: both sides' fields, the id, min/max timestamps, and the
        arriving row's time, partition and rank."""
        at = [np.where(side == 0, row, partner), np.where(side == 0, partner, row)]
        columns: dict[str, Any] = {}
        for index, table in enumerate(tables):
            assert table is not None
            for field in self.side_fields[index]:
                columns[f"{self.sides[index]}.{field}"] = table[f"v:{field}"][at[index]]
        ids = self._ids(tables, at)
        columns["id"] = ids
        left, right = tables
        assert left is not None and right is not None
        columns[MIN_TS] = np.minimum(left["min_ts"][at[0]], right["min_ts"][at[1]])
        columns[MAX_TS] = np.maximum(left["max_ts"][at[0]], right["max_ts"][at[1]])
        columns[RANK] = rank
        ts = np.empty(len(row), np.int64)
        partition = np.empty(len(row), np.int32)
        for index, table in enumerate(tables):
            assert table is not None
            mine = side == index
            ts[mine] = table["ts"][row[mine]]
            partition[mine] = table["partition"][row[mine]]
        return stream(self.id, ts, partition, columns)


RELEVANT_FROM = 1024
"""Held rows of a side from which a batch looks for the relevant ones (`_relevant`) first:
fewer cost less to join whole than to pick from."""
RELEVANT_SHARE = 0.5
"""The largest share of a side's held rows that a batch picks as relevant (more: it takes the
whole side, cheaper than copying most of it)."""


def _restricted(table: Columns | None, rows: Index | None, held: int) -> Columns | None:
    """The held rows `rows` of `table` followed by its arriving rows (all when `rows` is None)."""
    if table is None or rows is None:
        return table
    picked = np.concatenate([rows, np.arange(held, len(table["ts"]), dtype=rows.dtype)])
    return {name: column[picked] for name, column in table.items()}


def _widened(kept: Any, rows: Index | None, table: Columns | None, held: int) -> Any:
    """A keep mask over the restricted table (`_restricted`) as one over the whole table."""
    if kept is None or rows is None or table is None:
        return kept
    whole = np.ones(len(table["ts"]), dtype=bool)
    whole[rows] = kept[: len(rows)]
    whole[held:] = kept[len(rows) :]
    return whole


Places = tuple[str, Index, Index]
SMALL_IDS = 128
"""Pairs from which their ids are formatted by Arrow (fewer: by Python, whose cost per id is
higher but which has no fixed cost of some 50 us)."""


PARTITION_TEXTS = 4096
"""Partitions up to which `_place_pair_ids` takes each pair's `source@partition:` text from a
table of them (more: it formats every partition number)."""


def _place_pair_ids(first: Places, second: Places) -> Any:
    """`source@partition:offset*source@partition:offset` per pair of input places, as an object
    array of `str`. The texts up to each offset come from a table per partition number (input
    places have few partitions), so only the offsets are formatted and four parts joined (by
    Python for fewer than `SMALL_IDS` pairs, else by `result_json.joined`)."""
    (one, p1, o1), (two, p2, o2) = first, second
    top = int(max(p1.max(initial=0), p2.max(initial=0))) + 1
    if len(p1) < SMALL_IDS:
        ids = np.empty(len(p1), dtype=object)
        rows = zip(p1.tolist(), o1.tolist(), p2.tolist(), o2.tolist(), strict=True)
        if top > PARTITION_TEXTS:
            ids[:] = [f"{one}@{a}:{b}*{two}@{c}:{d}" for a, b, c, d in rows]
            return ids
        heads = [f"{one}@{p}:" for p in range(top)]
        middles = [f"*{two}@{p}:" for p in range(top)]
        ids[:] = [f"{heads[a]}{b}{middles[c]}{d}" for a, b, c, d in rows]
        return ids
    if top > PARTITION_TEXTS:
        texts = [np.ascontiguousarray(column, np.int64) for column in (p1, o1, p2, o2)]
        parts = [f"{one}@", texts[0], ":", texts[1], f"*{two}@", texts[2], ":", texts[3]]
        return joined(parts, len(p1), pa.string()).to_numpy(zero_copy_only=False)
    heads = pa.array([f"{one}@{p}:" for p in range(top)]).take(pa.array(p1))
    middles = pa.array([f"*{two}@{p}:" for p in range(top)]).take(pa.array(p2))
    offsets = [np.ascontiguousarray(column, np.int64) for column in (o1, o2)]
    pairs = joined([heads, offsets[0], middles, offsets[1]], len(p1), pa.string())
    return pairs.to_numpy(zero_copy_only=False)


def _ahead(code: Index, rank: Index, other_code: Index, other_rank: Index, groups: int) -> Index:
    """For each row `(code, rank)`, how many of the other rows are smaller in that order (both
    sets come in rank order: one merge, then a stable sort by code)."""
    merged = np.argsort(np.concatenate([rank, other_rank]), kind="stable")
    both_code = np.concatenate([code, other_code])[merged]
    order = merged[_by_code(both_code, groups)]
    is_other = (order >= len(code)).astype(np.int64)
    smaller = np.cumsum(is_other) - is_other
    found = np.empty(len(order), np.int64)
    found[order] = smaller
    return found[: len(code)]


def _by_code(codes: Index, groups: int) -> Any:
    """The rows in code order, stably (a radix sort when the codes fit 16 bits)."""
    keys = codes.astype(np.uint16) if groups <= 1 << 16 else codes
    return np.argsort(keys, kind="stable")


def _pair_order(rank: Index, later: Index) -> Index:
    """`np.lexsort((later, rank))` (`later` is never negative): one stable argsort of the two
    keys combined in one integer when it fits. The pairs come as a few runs each sorted
    already (per side and kind, by arriving row, then partner), which a stable sort merges in
    about one pass, where `lexsort` sorts twice, key by key."""
    if len(rank) == 0:
        return np.empty(0, np.int64)
    low = int(rank.min())
    width = int(later.max()) + 1
    if (int(rank.max()) - low + 1) * width >= 1 << 62:
        return np.lexsort((later, rank))
    return np.argsort((rank.astype(np.int64) - low) * width + later, kind="stable")


SORTED_SEARCH_FROM = 4096
"""Needles from which `_sorted_search` sorts them first (fewer: the haystack stays in cache and
the sort costs more than it saves)."""


def _sorted_search(haystack: Index, needles: Index, codes: Index) -> Index:
    """`np.searchsorted(haystack, needles)`, the needles looked up in the order of their key
    `codes` (a radix sort): needles keyed by code then time come nearly sorted that way, and
    numpy's search of ascending needles starts where the last one ended, in cache, where
    needles in arrival order jump across the haystack."""
    if len(needles) < SORTED_SEARCH_FROM:
        return np.searchsorted(haystack, needles)
    order = _by_code(codes, int(codes.max(initial=0)) + 1)
    found = np.empty(len(needles), np.int64)
    found[order] = np.searchsorted(haystack, needles[order])
    return found


def _rows(table: Columns | None) -> int:
    return 0 if table is None else len(table["ts"])


def combined(left: str, right: str) -> str:
    """The id of a combined tuple: its base tuples' ids in sorted order (join-order free)."""
    return "*".join(sorted(f"{left}*{right}".split("*")))


def combined_identity(left: Record, right: Record) -> str:
    """`combined` of two held tuples."""
    return combined(left[IDENTITY], right[IDENTITY])


WIDE_MS = 1 << 40
"""Range joins at least this wide (some 35 years of event time; q3's never expires) check per
batch whether `W` covers every distance it meets, and then skip the lookups that would prune
nothing; narrower ones, which a batch seldom spares them, do not pay for the check."""


class RangeJoin(SymmetricJoin):
    """Time-range symmetric join with lemma 2.2 purging, bounded by the watermark.

    `extents`, per side, bounds `max_ts - min_ts` of the tuples that side receives (None:
    unknown): 0 for an input's records, a range join's `W` for its results (they join only
    within it). Every tuple arriving after `advance(w)` holds a record released after it, at
    or past `w`, so its `min_ts` is at least `w` less its side's extent: the other side's
    tuples older than that less `W` can join nothing more, also when no tuple of this side
    arrives again (lemma 2.2 alone keeps them until one does: an upstream join that matches
    no more would hold them, and with them parallel track's old box, for ever)."""

    def __init__(
        self,
        node_id: str,
        sides: Sequence[str],
        on: Sequence[tuple[str, str]],
        size: int,
        side_fields: Sequence[Sequence[str]],
        side_keys: Sequence[Sequence[str]],
        keyed: bool,
        extents: tuple[int | None, int | None] = (None, None),
    ) -> None:
        super().__init__(node_id, sides, on, size, side_fields, side_keys, keyed)
        self.extents = extents

    def joinable(self, left: Record, right: Record) -> bool:
        span: int = max(left[MAX], right[MAX]) - min(left[MIN], right[MIN])
        return span <= self.size

    def _joinable(self, own: Columns, row: Index, other: Columns, partner: Index) -> Any:
        high = np.maximum(own["max_ts"][row], other["max_ts"][partner])
        low = np.minimum(own["min_ts"][row], other["min_ts"][partner])
        return (high - low) <= self.size

    def _candidates(self, held: Index, before: Index, ahead: Ahead) -> tuple[Index, Index, Index]:
        """Arriving partners only from the first whose `ts` is within `W` of the arriving
        row's: rows of one key come in time order, so the ones before are older still (when
        they do not, as after a firing upstream, every one ahead is checked)."""
        zero = np.zeros(len(held), np.int64)
        codes, ts = ahead.codes, ahead.ts
        if len(ts) == 0 or len(held) == 0:
            return zero, held, zero
        if self.size >= WIDE_MS and int(ahead.arriving_ts.max()) - self.size < int(ts.min()):
            return zero, held, zero  # every one is within `W` (q3's join never expires)
        if len(ts) > 1 and bool(np.any((ts[1:] < ts[:-1]) & (codes[1:] == codes[:-1]))):
            return zero, held, zero
        low, high = int(ts.min()) - 1, int(ts.max()) + 1
        bound = np.clip(np.maximum(ahead.arriving_ts, low + self.size) - self.size, low, high)
        width = high - low + 1
        if (int(codes.max(initial=0)) + 1) * width >= 1 << 62:
            values = np.unique(np.concatenate([ts, bound]))
            ts, bound, low, width = (
                np.searchsorted(values, ts),
                np.searchsorted(values, bound),
                0,
                len(values),
            )
        keyed_ts = codes * width + (ts - low)
        found = _sorted_search(keyed_ts, ahead.code * width + (bound - low), ahead.code)
        return zero, held, np.clip(found - ahead.group_start, 0, before)

    def _kept(self, tables: list[Columns | None], counts: list[int], codes: list[Index]) -> Any:
        """Lemma 2.2: a row goes once the other side's largest arriving `min_ts` of its key
        exceeds its `max_ts` by more than `W`."""
        kept: list[Any] = []
        for side in (0, 1):
            table, other = tables[side], tables[1 - side]
            if table is None or other is None or _rows(other) == counts[1 - side]:
                kept.append(None)
                continue
            arriving_mins = other["min_ts"][counts[1 - side] :]
            if self.size >= WIDE_MS and int(arriving_mins.max()) - self.size <= int(
                table["max_ts"].min(initial=INT64_MAX)
            ):
                kept.append(None)  # no arriving tuple is `W` past any row (q3: none ever is)
                continue
            later = codes[1 - side][counts[1 - side] :]
            width = int(max(codes[side].max(initial=0), later.max(initial=0))) + 1
            newest = np.full(width, INT64_MIN, np.int64)
            order = _by_code(later, width)
            ordered = later[order]
            starts = np.flatnonzero(np.append(True, ordered[1:] != ordered[:-1]))
            mins = arriving_mins[order]
            newest[ordered[starts]] = np.maximum.reduceat(mins, starts)
            bound = np.maximum(newest[codes[side]], INT64_MIN + self.size) - self.size
            kept.append(table["max_ts"] >= bound)
        return kept

    def advance(self, watermark: int) -> list[Batch]:
        """Purge every key's state by lemma 2.2, using the largest `min_ts` seen on the other
        side, or what the watermark leaves the other side's later tuples (`extents`) when that
        is more (memory only: `_joinable` decides what joins)."""
        for side in (0, 1):
            table = self.side(side).table()
            if table is None:
                continue
            later = min(self.latest_min[1 - side], watermark)
            extent = self.extents[1 - side]
            if extent is not None:
                later = max(later, watermark - extent)
            bound = max(later - self.size, INT64_MIN)
            keep = table["max_ts"] >= bound
            self.side(side).keep(keep)
        return []


class RowsJoin(SymmetricJoin):
    """Tuple-based symmetric join: the last `size` tuples per side and join key."""

    def _candidates(self, held: Index, before: Index, ahead: Ahead) -> tuple[Index, Index, Index]:
        """The last `n` of the other side's tuples of the key: held ones, then those arriving
        ahead."""
        first = np.maximum(held + before - self.size, 0)
        return np.minimum(first, held), held, np.maximum(first - held, 0)

    def _kept(self, tables: list[Columns | None], counts: list[int], codes: list[Index]) -> Any:
        """Per side and key, the last `n` rows."""
        kept: list[Any] = []
        for side in (0, 1):
            if tables[side] is None:
                kept.append(None)
                continue
            code = codes[side]
            order = _by_code(code, int(code.max(initial=0)) + 1)
            ordered = code[order]
            boundary = np.ones(len(ordered), dtype=bool)
            boundary[1:] = ordered[1:] != ordered[:-1]
            starts = np.flatnonzero(boundary)
            sizes = np.diff(np.append(starts, len(ordered)))
            from_end = np.repeat(starts + sizes, sizes) - np.arange(len(ordered))
            keep = np.zeros(len(code), dtype=bool)
            keep[order] = from_end <= self.size
            kept.append(keep)
        return kept
