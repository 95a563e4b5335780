"""`Pipeline`: one instance's operators of a compiled plan, driven batch by batch.

The contract (docs/design/engine-api.md): `process(batch)` takes records of one input already in
merge order and below the watermark; `advance(watermark)` fires every window whose end is
`<= watermark`; `flush()` ends the input. Operators run in the plan's topological order, and a
watermark reaches an operator only after the outputs its upstreams fired on that watermark, so
results come out in a deterministic order. Snapshots hold every operator's stores, split by
partition, in the pickle-free format of `state.codec`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import Places, ResultBatch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.stream import (
    MAX_TS,
    MIN_TS,
    RESERVED,
    WINDOW_END,
    WINDOW_START,
)
from streamshift_engine.state import codec


class Pipeline:
    """Operators of one plan wired as a DAG, with results converted to `ResultBatch`."""

    def __init__(
        self,
        query: str,
        operators: Sequence[Operator],
        edges: dict[str, list[tuple[int, int]]],
        output: str,
        result_keys: Sequence[str],
    ) -> None:
        self.query = query
        self.operators = list(operators)
        self.edges = edges
        self.output = output
        self.result_keys = tuple(result_keys)

    def process(self, batch: Batch) -> list[ResultBatch]:
        results: list[ResultBatch] = []
        if len(batch):
            self._route(batch.source, [batch], results)
        return results

    def advance(self, watermark: int) -> list[ResultBatch]:
        return self._each_operator(lambda operator: operator.advance(watermark))

    def flush(self) -> list[ResultBatch]:
        return self._each_operator(lambda operator: operator.flush())

    def _each_operator(self, fire: Callable[[Operator], list[Batch]]) -> list[ResultBatch]:
        results: list[ResultBatch] = []
        for operator in self.operators:
            self._route(operator.id, fire(operator), results)
        return results

    def _route(self, node: str, batches: list[Batch], results: list[ResultBatch]) -> None:
        for batch in batches:
            if node == self.output:
                results.append(self.to_results(batch))
            for index, port in self.edges.get(node, []):
                self._route(
                    self.operators[index].id, self.operators[index].process(port, batch), results
                )

    def to_results(self, batch: Batch) -> ResultBatch:
        """Records of the output node as results: keys, values, window bounds, min/max ts."""
        n = len(batch)
        columns = batch.columns
        no_window = np.full(n, -1, np.int64)
        places = None
        if self.result_keys or WINDOW_START in columns:
            keys = {k: columns[k] for k in self.result_keys}
        else:
            keys, places = {}, Places(batch.source, batch.offset)
        values = {
            name: column
            for name, column in columns.items()
            if name not in RESERVED and name not in keys and name != "id"
        }
        return ResultBatch(
            query=self.query,
            partition=batch.partition,
            window_start=columns.get(WINDOW_START, no_window),
            window_end=columns.get(WINDOW_END, no_window),
            min_ts=columns.get(MIN_TS, batch.ts),
            max_ts=columns.get(MAX_TS, batch.ts),
            keys=keys,
            values=values,
            places=places,
        )

    def snapshot(self, partitions: Collection[int] | None = None) -> bytes:
        """State of the given partitions (all when None) as versioned, self-describing bytes."""
        return codec.encode(*self.arrays(partitions))

    def arrays(
        self, partitions: Collection[int] | None = None
    ) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
        """State of the given partitions (all when None): metadata and named columns, what
        `snapshot` encodes (an instance snapshot encodes them in its own envelope)."""
        arrays: dict[str, npt.NDArray[Any]] = {}
        for operator in self.operators:
            for store, columns in operator.snapshot(partitions).items():
                for column, values in columns.items():
                    arrays[f"{operator.id}/{store}/{column}"] = values
        chosen = None if partitions is None else sorted(partitions)
        return {"kind": "pipeline", "query": self.query, "partitions": chosen}, arrays

    def restore(self, data: bytes | memoryview) -> None:
        """Add the state in `data` (from `snapshot` of a pipeline of the same plan)."""
        self.restore_arrays(*codec.decode(data))

    def restore_arrays(self, meta: dict[str, Any], arrays: dict[str, npt.NDArray[Any]]) -> None:
        """Add the state `arrays` hands over for good (from `arrays` of the same plan)."""
        if meta.get("kind") != "pipeline" or meta.get("query") != self.query:
            raise codec.SnapshotError(f"not a snapshot of query {self.query!r}: {meta}")
        tables: dict[str, dict[str, dict[str, npt.NDArray[Any]]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        for name, values in arrays.items():
            node, store, column = name.split("/", 2)
            tables[node][store][column] = values
        for operator in self.operators:
            if operator.id in tables:
                operator.restore(tables[operator.id])

    def drop(self, partitions: Collection[int]) -> None:
        for operator in self.operators:
            operator.drop(partitions)

    def state_bytes(self) -> int:
        return sum(operator.state_bytes() for operator in self.operators)

    def partitions(self) -> set[int]:
        held: set[int] = set()
        for operator in self.operators:
            held |= operator.partitions()
        return held
