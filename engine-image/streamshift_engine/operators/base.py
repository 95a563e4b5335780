"""The operator interface (bytewax style): react to batches, watermarks and end of input, and
snapshot, restore and drop state by partition.

Operators consume and produce `Batch` streams (conventions in `operators.stream`). Calls come in
the deterministic merge order: `process` gets records below the watermark, `advance(wm)` fires
every window whose end is `<= wm`, `flush` fires everything at end of input. All state lives in
named `StateStore`s, so snapshot, restore and drop are generic.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Batch
from streamshift_engine.state.stores import Columns, StateStore

FLUSH_WATERMARK = np.iinfo(np.int64).max // 4


class Operator(ABC):
    """Base of all operators; stateless unless a subclass registers stores in `stores`."""

    def __init__(self, node_id: str, keyed: bool = True) -> None:
        self.id = node_id
        self.keyed = keyed
        self.stores: dict[str, StateStore] = {}

    @abstractmethod
    def process(self, port: int, batch: Batch) -> list[Batch]:
        """Consume records of input `port` (0 = first upstream); return records produced."""

    def advance(self, watermark: int) -> list[Batch]:
        return []

    def flush(self) -> list[Batch]:
        return self.advance(FLUSH_WATERMARK)

    def state_partition(self, batch: Batch) -> npt.NDArray[np.int32]:
        """Where a record's state lives: its partition when keyed, 0 for global operators."""
        return batch.partition if self.keyed else np.zeros(len(batch), np.int32)

    def snapshot(self, partitions: Collection[int] | None = None) -> dict[str, Columns]:
        return {name: store.snapshot(partitions) for name, store in self.stores.items()}

    def restore(self, tables: Mapping[str, Mapping[str, npt.NDArray[Any]]]) -> None:
        for name, store in self.stores.items():
            if name in tables:
                store.restore(tables[name])

    def drop(self, partitions: Collection[int]) -> None:
        for store in self.stores.values():
            store.drop(partitions)

    def state_bytes(self) -> int:
        return sum(store.nbytes() for store in self.stores.values())

    def partitions(self) -> set[int]:
        held: set[int] = set()
        for store in self.stores.values():
            held |= store.partitions()
        return held
