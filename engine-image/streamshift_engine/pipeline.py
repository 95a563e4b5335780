"""`Pipeline`: one instance's operators of a compiled plan, driven batch by batch.

The contract (docs/design/engine-api.md): `process(batch)` takes records of one input already in
merge order and below the watermark; `process_merged(batches)` takes one release of several
inputs at once, each record ranked in the merge order (`_rank`), when `merges` says the plan can
(see there);  `advance(watermark)` fires every window whose end is
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
from streamshift_engine.operators.joins import SymmetricJoin
from streamshift_engine.operators.stateless import Filter, Map
from streamshift_engine.operators.stream import (
    MAX_TS,
    MIN_TS,
    RESERVED,
    WINDOW_END,
    WINDOW_START,
)
from streamshift_engine.operators.window_join import TumblingWindowJoin
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
        self.merges = self._merges()

    def _merges(self) -> bool:
        """Whether one release of several inputs can go through at once (`process_merged`):
        every operator with two inputs is a join, a symmetric one (it orders both sides by
        rank) with sides drawn from disjoint inputs through operators that keep each record
        and its rank (filters, maps, symmetric joins), or a tumbling one (its firing does not
        depend on the order of its inputs). Other operators take each of their inputs' records
        in merge order either way."""
        kept = (Filter, Map, SymmetricJoin)
        by_id = {operator.id: operator for operator in self.operators}
        upstream: dict[str, list[str]] = defaultdict(list)
        for node, targets in self.edges.items():
            for index, _ in targets:
                upstream[self.operators[index].id].append(node)

        def inputs_of(node: str) -> set[str] | None:
            """The plan inputs reaching `node` through rank-keeping operators (None: some
            path passes another operator)."""
            if node not in by_id:
                return {node}
            if not isinstance(by_id[node], kept):
                return None
            found: set[str] = set()
            for parent in upstream[node]:
                reached = inputs_of(parent)
                if reached is None:
                    return None
                found |= reached
            return found

        for operator in self.operators:
            parents = upstream[operator.id]
            if len(parents) < 2 or isinstance(operator, TumblingWindowJoin):
                continue
            if not isinstance(operator, SymmetricJoin):
                return False
            sides = [inputs_of(parent) for parent in parents]
            if sides[0] is None or sides[1] is None or sides[0] & sides[1]:
                return False
        return True

    def process_merged(self, batches: Sequence[Batch]) -> list[ResultBatch]:
        """One release of several inputs (a batch each, its records ranked in the merge order
        by `_rank`), when `merges`: each operator runs once, in topological order, on all it
        received, and a symmetric join takes both sides together. The results are those of
        `process` over the release cut into runs of one input, in the same order."""
        results: list[ResultBatch] = []
        pending: dict[int, list[list[Batch]]] = {}

        def deliver(node: str, produced: list[Batch]) -> None:
            for batch in produced:
                if len(batch) == 0:
                    continue
                if node == self.output:
                    results.append(self.to_results(batch))
                for index, port in self.edges.get(node, []):
                    pending.setdefault(index, [[], []])[port].append(batch)

        for batch in batches:
            deliver(batch.source, [batch])
        for index, operator in enumerate(self.operators):
            ports = pending.pop(index, None)
            if ports is None:
                continue
            sides = [Batch.concat(parts) if parts else None for parts in ports]
            if isinstance(operator, SymmetricJoin):
                deliver(operator.id, operator.process_sides(sides))
                continue
            for port, side in enumerate(sides):
                if side is not None:
                    deliver(operator.id, operator.process(port, side))
        return results

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
