"""State stores: where operators keep state, always split by partition (key group).

Every store can hand out the state of any subset of partitions as named columns (`snapshot`),
take such columns back (`restore`, adding to what it holds) and forget partitions (`drop`), so a
partition can leave an instance with its state. Global operators (parallelism 1) keep all their
state under partition 0. Two variants, after quix-streams' store layout:

- `TableStore`: a columnar table with a `partition` column, for vectorised operators.
- `KeyedRecordStore`: per (partition, key) a list of records in arrival order, for per-record
  operators (tuple windows, symmetric joins, sessions, counters).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

Columns = dict[str, npt.NDArray[Any]]


class StateStore(ABC):
    """State split by partition; snapshots are named columns including `partition`."""

    @abstractmethod
    def snapshot(self, partitions: Collection[int] | None = None) -> Columns: ...

    @abstractmethod
    def restore(self, columns: Mapping[str, npt.NDArray[Any]]) -> None: ...

    @abstractmethod
    def drop(self, partitions: Collection[int]) -> None: ...

    @abstractmethod
    def nbytes(self) -> int: ...

    @abstractmethod
    def partitions(self) -> set[int]: ...


def _partition_mask(
    partition: npt.NDArray[Any], partitions: Collection[int]
) -> npt.NDArray[np.bool_]:
    return np.isin(partition, np.fromiter(partitions, np.int64, len(partitions)))


class TableStore(StateStore):
    """A columnar table; `columns` always includes an int32 `partition` column.

    Rows are appended into spare capacity that doubles when it runs out, so an append copies
    only the new rows (amortised): a whole-table concatenation would copy all of a large join
    state on every step's few new rows. `columns` hands out
    views of the first `len` rows; rows appended later never change what an earlier view
    shows, and arrays given to `replace` are never written to (they have no spare capacity:
    the first append that adds rows makes buffers of its own)."""

    def __init__(self, dtypes: Mapping[str, Any]) -> None:
        self.dtypes = {
            "partition": np.dtype(np.int32),
            **{k: np.dtype(v) for k, v in dtypes.items()},
        }
        self._buffers: Columns = {name: np.empty(0, dtype) for name, dtype in self.dtypes.items()}
        self._length = 0

    @property
    def columns(self) -> Columns:
        """The table's rows, a view per column."""
        length = self._length
        return {name: buffer[:length] for name, buffer in self._buffers.items()}

    def __len__(self) -> int:
        return self._length

    def replace(self, columns: Mapping[str, npt.NDArray[Any]]) -> None:
        self._buffers = {
            name: np.asarray(columns[name], dtype) for name, dtype in self.dtypes.items()
        }
        self._length = len(self._buffers["partition"])

    def append(self, columns: Mapping[str, npt.NDArray[Any]]) -> None:
        if self._length == 0:
            self.replace(columns)
            return
        added = len(columns["partition"])
        length, capacity = self._length, len(self._buffers["partition"])
        if length + added > capacity:
            capacity = max(2 * capacity, length + added)
            grown = {name: np.empty(capacity, dtype) for name, dtype in self.dtypes.items()}
            for name, buffer in grown.items():
                buffer[:length] = self._buffers[name][:length]
            self._buffers = grown
        for name, dtype in self.dtypes.items():
            self._buffers[name][length : length + added] = np.asarray(columns[name], dtype)
        self._length = length + added

    def keep(self, mask: npt.NDArray[np.bool_]) -> None:
        self.replace({name: column[mask] for name, column in self.columns.items()})

    def snapshot(self, partitions: Collection[int] | None = None) -> Columns:
        if partitions is None:
            return dict(self.columns)
        mask = _partition_mask(self.columns["partition"], partitions)
        return {name: column[mask] for name, column in self.columns.items()}

    def restore(self, columns: Mapping[str, npt.NDArray[Any]]) -> None:
        self.append(columns)

    def drop(self, partitions: Collection[int]) -> None:
        self.keep(~_partition_mask(self.columns["partition"], partitions))

    def nbytes(self) -> int:
        total = 0
        for column in self.columns.values():
            total += column.nbytes if column.dtype != object else 64 * len(column)
        return total

    def partitions(self) -> set[int]:
        return set(np.unique(self.columns["partition"]).tolist())


class KeyedRecordStore(StateStore):
    """Per (partition, key) a list of records (tuples of `fields`), oldest first."""

    def __init__(self, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self.groups: dict[tuple[int, Any], list[tuple[Any, ...]]] = {}

    def records(self, partition: int, key: Any) -> list[tuple[Any, ...]]:
        """The live list for (partition, key), created empty on first use."""
        group = self.groups.get((partition, key))
        if group is None:
            group = self.groups[(partition, key)] = []
        return group

    def snapshot(self, partitions: Collection[int] | None = None) -> Columns:
        wanted = None if partitions is None else set(partitions)
        rows = [
            (partition, key, *record)
            for (partition, key), records in self.groups.items()
            if wanted is None or partition in wanted
            for record in records
        ]
        names = ("partition", "key", *self.fields)
        columns: Columns = {}
        for index, name in enumerate(names):
            values = np.empty(len(rows), dtype=object)
            values[:] = [row[index] for row in rows]
            columns[name] = values.astype(np.int32) if name == "partition" else values
        return columns

    def restore(self, columns: Mapping[str, npt.NDArray[Any]]) -> None:
        lists = [columns[name].tolist() for name in ("partition", "key", *self.fields)]
        for partition, key, *record in zip(*lists, strict=True):
            self.records(partition, _hashable(key)).append(tuple(_hashable(v) for v in record))

    def drop(self, partitions: Collection[int]) -> None:
        leaving = set(partitions)
        self.groups = {pk: records for pk, records in self.groups.items() if pk[0] not in leaving}

    def nbytes(self) -> int:
        return sum(64 * (1 + len(self.fields)) * len(records) for records in self.groups.values())

    def partitions(self) -> set[int]:
        return {partition for (partition, _), records in self.groups.items() if records}


def _hashable(value: Any) -> Any:
    """JSON round trips turn tuples into lists; keys and records need tuples back."""
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value
