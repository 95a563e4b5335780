"""Stateless operators: filter by a predicate, and map/project with computed fields."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.stream import RESERVED
from streamshift_engine.plan.expressions import Expression, compile_expression


class Filter(Operator):
    """Keeps the records for which `predicate` holds (vectorised over the batch)."""

    def __init__(self, node_id: str, predicate: str) -> None:
        super().__init__(node_id)
        self.predicate: Expression = compile_expression(predicate)

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        with np.errstate(all="ignore"):
            mask = np.asarray(self.predicate(batch.columns, len(batch)), dtype=bool)
        return [batch.take(mask)] if mask.any() else []


class Map(Operator):
    """Adds (or overwrites) computed fields; with `keep_input=False` keeps only those fields
    (a projection), though the reserved timestamp and window columns always travel along."""

    def __init__(self, node_id: str, fields: Mapping[str, str], keep_input: bool) -> None:
        super().__init__(node_id)
        self.fields = {name: compile_expression(text) for name, text in fields.items()}
        self.keep_input = keep_input

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        with np.errstate(all="ignore"):
            computed = {
                name: np.asarray(e(batch.columns, len(batch))) for name, e in self.fields.items()
            }
        kept = (
            batch.columns
            if self.keep_input
            else {name: column for name, column in batch.columns.items() if name in RESERVED}
        )
        return [batch.with_columns({**kept, **computed})]
