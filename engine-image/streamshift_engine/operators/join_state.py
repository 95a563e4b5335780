"""`JoinState`: one side of a symmetric join, held as columns, seen as a `KeyedRecordStore`.

The join works on whole columns (`table`, `replace`). Code that reads or fills a join side per
tuple (a plan change recomputing state, the migration monitor, snapshots restored) sees the
`KeyedRecordStore` it knows: `groups`, per (partition, join key) the tuples
`(ts, min_ts, max_ts, identity, *fields)` oldest first. Whichever form was used last holds the
state; the other is built from it on demand (one pass over the state), so a migration's reads
and writes between two batches cost one conversion each way.

An input record's identity (`source@partition:offset`) is kept as its partition and offset and
formatted only when it is needed (a result, a tuple handed out), as for `TumblingWindowJoin`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.state.stores import KeyedRecordStore
from streamshift_engine.windows.record_windows import python_column

Columns = dict[str, npt.NDArray[Any]]
Groups = dict[tuple[int, Any], list[tuple[Any, ...]]]
META = ("ts", "min_ts", "max_ts", "identity")


class JoinState(KeyedRecordStore):
    """Columns `partition`, `ts`, `min_ts`, `max_ts`, `identity` (None: formatted from
    `place_partition`, `place_offset` and `place_source`), and `v:<field>` per field; `key`
    names the join key's fields."""

    def __init__(self, fields: Sequence[str], key: Sequence[str]) -> None:
        self.values = tuple(fields)
        self.key = tuple(key)
        self.place_source: str | None = None
        self._table: Columns | None = None
        self._length = 0
        self._groups: Groups | None = {}
        super().__init__((*META, *fields))

    @property
    def groups(self) -> Groups:
        """The tuples per (partition, join key), built from the columns if they hold the state
        (from then on the groups hold it, until the join's next `table`)."""
        if self._groups is None:
            self._groups = self._to_groups()
            self._table, self._length = None, 0
        return self._groups

    @groups.setter
    def groups(self, groups: Groups) -> None:
        self._groups, self._table, self._length = groups, None, 0

    def table(self) -> Columns | None:
        """The state as columns (None: no tuple), built from the groups if they hold it."""
        if self._groups is not None:
            self.replace(self._from_groups(self._groups))
        if self._table is None:
            return None
        return {name: column[: self._length] for name, column in self._table.items()}

    def replace(self, table: Columns | None) -> None:
        """The state is now `table`."""
        self._groups = None
        self._length = 0 if table is None else len(table["ts"])
        self._table = table if self._length else None

    def extend(self, arriving: Columns | None) -> tuple[Columns | None, int]:
        """The held rows followed by `arriving` (written after them in buffers with room to
        spare, so the held rows are not copied again), and how many rows were held."""
        held = self.table()
        count = 0 if held is None else len(held["ts"])
        if arriving is None:
            return held, count
        total = count + len(arriving["ts"])
        buffers = self._table
        if buffers is None or not _fits(buffers, arriving, total):
            room = max(2 * total, 64)
            buffers = {}
            for name, column in arriving.items():
                dtype = column.dtype
                if held is not None and name in held:
                    dtype = np.result_type(held[name].dtype, dtype)
                buffer = np.empty(room, dtype)
                if held is not None:
                    buffer[:count] = held.get(name, -1)
                buffers[name] = buffer
        for name, column in arriving.items():
            buffers[name][count:total] = column
        self._table, self._length, self._groups = buffers, total, None
        return {name: column[:total] for name, column in buffers.items()}, count

    def keep(self, rows: Any) -> None:
        """Keep only the rows `rows` selects (a mask over `table()`)."""
        table = self.table()
        if table is None or rows is None or bool(np.all(rows)):
            return
        self.replace({name: column[rows] for name, column in table.items()})

    def identities(self, table: Columns, at: npt.NDArray[np.int64]) -> list[str]:
        """The identities of rows `at` of `table` (this side's rows)."""
        texts: list[str] = table["identity"][at].tolist()
        missing = [i for i, text in enumerate(texts) if text is None]
        if missing:
            partitions = table["place_partition"][at].tolist()
            offsets = table["place_offset"][at].tolist()
            for i in missing:
                texts[i] = f"{self.place_source}@{partitions[i]}:{offsets[i]}"
        return texts

    def places(
        self, table: Columns, at: npt.NDArray[np.int64]
    ) -> tuple[str, npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
        """The input places of rows `at` (source, partitions, offsets), when all are input
        places (else None)."""
        if self.place_source is None:
            return None
        partitions = table["place_partition"][at]
        if len(partitions) and int(partitions.min()) < 0:
            return None
        return self.place_source, partitions, table["place_offset"][at]

    def _to_groups(self) -> Groups:
        groups: Groups = {}
        table = self.table()
        if table is None:
            return groups
        values = [table[f"v:{name}"].tolist() for name in self.values]
        key_at = [len(META) + self.values.index(name) for name in self.key]
        every = np.arange(len(table["ts"]), dtype=np.int64)
        records = zip(
            table["ts"].tolist(),
            table["min_ts"].tolist(),
            table["max_ts"].tolist(),
            self.identities(table, every),
            *values,
            strict=True,
        )
        for partition, record in zip(table["partition"].tolist(), records, strict=True):
            key = tuple(record[at] for at in key_at)
            group = groups.get((partition, key))
            if group is None:
                group = groups[(partition, key)] = []
            group.append(record)
        return groups

    def _from_groups(self, groups: Groups) -> Columns | None:
        rows = [(p, *record) for (p, _), records in groups.items() for record in records]
        if not rows:
            return None
        columns = list(zip(*rows, strict=True))
        n = len(rows)
        table: Columns = {
            "partition": np.asarray(columns[0], np.int32),
            "ts": np.asarray(columns[1], np.int64),
            "min_ts": np.asarray(columns[2], np.int64),
            "max_ts": np.asarray(columns[3], np.int64),
            "identity": python_column(list(columns[4])).astype(object),
            "place_partition": np.full(n, -1, np.int64),
            "place_offset": np.full(n, -1, np.int64),
        }
        for index, name in enumerate(self.values):
            table[f"v:{name}"] = python_column(list(columns[1 + len(META) + index]))
        return table

    def snapshot(self, partitions: Collection[int] | None = None) -> dict[str, Any]:
        if self._groups is not None:
            return super().snapshot(partitions)
        table = self.table()
        if table is not None and partitions is not None:
            chosen = np.isin(table["partition"], list(partitions))
            table = {name: column[chosen] for name, column in table.items()}
        n = 0 if table is None else len(table["ts"])
        columns: dict[str, Any] = {"partition": np.empty(0, np.int32)}
        if table is not None:
            columns["partition"] = table["partition"].astype(np.int32)
        keys = np.empty(n, dtype=object)
        texts = np.empty(n, dtype=object)
        if table is not None:
            parts = [table[f"v:{name}"].tolist() for name in self.key]
            keys[:] = list(zip(*parts, strict=True))
            texts[:] = self.identities(table, np.arange(n, dtype=np.int64))
        columns["key"] = keys
        for name in self.fields:
            values = np.empty(n, dtype=object)
            if name == "identity":
                values = texts
            elif table is not None:
                column = table[name] if name in META else table[f"v:{name}"]
                values[:] = column.tolist()
            columns[name] = values
        return columns

    def restore(self, columns: Mapping[str, npt.NDArray[Any]]) -> None:
        self.groups  # noqa: B018 (the groups hold the state while restoring)
        super().restore(columns)

    def drop(self, partitions: Collection[int]) -> None:
        if self._groups is not None:
            super().drop(partitions)
            return
        table = self.table()
        if table is not None:
            self.keep(~np.isin(table["partition"], list(partitions)))

    def nbytes(self) -> int:
        if self._groups is not None:
            return super().nbytes()
        return 64 * (1 + len(self.fields)) * self._length

    def partitions(self) -> set[int]:
        if self._groups is not None:
            return super().partitions()
        table = self.table()
        if table is None:
            return set()
        return set(np.unique(table["partition"]).tolist())


def _fits(buffers: Columns, arriving: Columns, total: int) -> bool:
    """Whether `arriving` can be written into `buffers` as they are: the same columns, room
    for `total` rows, and types that hold its values."""
    if buffers.keys() != arriving.keys() or len(buffers["ts"]) < total:
        return False
    return all(
        np.can_cast(column.dtype, buffers[name].dtype, "safe") for name, column in arriving.items()
    )
