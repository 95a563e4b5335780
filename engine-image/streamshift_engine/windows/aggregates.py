"""Vectorised aggregate partials: count, sum, min, max (avg = sum / count), merged by group.

An aggregate keeps partial columns (`n` for counts, `sum:<field>`, `min:<field>`,
`max:<field>`) that combine associatively, so panes of a sliding window and chunks of a batch
are reduced once and merged later.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.operators.grouping import Grouping

COUNT = "n"
_REDUCERS = {"sum": np.add, "min": np.minimum, "max": np.maximum, "n": np.add}


@dataclass(frozen=True)
class AggregateSpec:
    """One output aggregate: its name, function and input field (None for count)."""

    name: str
    function: str
    field: str | None


def partial_names(aggregates: Sequence[AggregateSpec]) -> list[str]:
    """Partial columns needed by the aggregates (always the count and the timestamp bounds)."""
    names = [COUNT, "min:_ts", "max:_ts"]
    for aggregate in aggregates:
        if aggregate.function in ("sum", "avg"):
            names.append(f"sum:{aggregate.field}")
        elif aggregate.function in ("min", "max"):
            names.append(f"{aggregate.function}:{aggregate.field}")
    return list(dict.fromkeys(names))


def reduce_partials(
    grouping: Grouping, inputs: Mapping[str, npt.NDArray[Any]], names: Sequence[str]
) -> tuple[npt.NDArray[np.intp], dict[str, npt.NDArray[Any]]]:
    """Reduce the rows of each group into one partial row.

    `inputs` holds, per partial name, the values to combine (for raw records: ones for `n`, the
    field for `sum:`/`min:`/`max:`). Returns each group's first row and the partials.
    """
    if grouping.count == 0:
        return grouping.first, {name: inputs[name][:0] for name in names}
    partials = {}
    for name in names:
        reducer = _REDUCERS[name.split(":", 1)[0]]
        partials[name] = reducer.reduceat(inputs[name][grouping.order], grouping.starts)
    return grouping.first, partials


def finalize(
    aggregates: Sequence[AggregateSpec], partials: Mapping[str, npt.NDArray[Any]]
) -> dict[str, npt.NDArray[Any]]:
    """The aggregate values from merged partials."""
    values: dict[str, npt.NDArray[Any]] = {}
    for aggregate in aggregates:
        if aggregate.function == "count":
            values[aggregate.name] = partials[COUNT].astype(np.int64)
        elif aggregate.function == "avg":
            values[aggregate.name] = partials[f"sum:{aggregate.field}"] / partials[COUNT]
        else:
            values[aggregate.name] = partials[f"{aggregate.function}:{aggregate.field}"]
    return values


def raw_inputs(
    names: Sequence[str], columns: Mapping[str, npt.NDArray[Any]], lo: Any, hi: Any
) -> dict[str, npt.NDArray[Any]]:
    """Per partial name, the raw record values to reduce (`lo`/`hi`: timestamp bounds)."""
    inputs: dict[str, npt.NDArray[Any]] = {COUNT: np.ones(len(lo), np.int64)}
    for name in names:
        if name == "min:_ts":
            inputs[name] = lo
        elif name == "max:_ts":
            inputs[name] = hi
        elif name != COUNT:
            inputs[name] = columns[name.split(":", 1)[1]]
    return inputs
