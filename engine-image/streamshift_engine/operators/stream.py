"""Conventions for the streams between operators, and the grouping helper they share.

Between operators a stream is a `Batch` whose `source` is the producing node. Besides payload
columns it may carry reserved columns: `_min_ts` and `_max_ts` (the combined-tuple timestamps of
seed 001 (Zhu et al., Dynamic Plan Migration) lemma 2.2; absent means both equal `ts`),
`_window_start`, `_window_end` (absent means the record has no window) and `_rank` (see `RANK`). A
record's identity is deterministic: an input record is `source@partition:offset`; a windowed result
is `source|window_start|window_end|keys`; a join result carries both sides' identities in `id`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamshift_engine.events.batch import Batch

MIN_TS = "_min_ts"
MAX_TS = "_max_ts"
WINDOW_START = "_window_start"
WINDOW_END = "_window_end"
RANK = "_rank"
"""A record's place in the merge order of one release (`Pipeline.process_merged`): joins take
both sides of a release at once and order them by it."""
RESERVED = frozenset({MIN_TS, MAX_TS, WINDOW_START, WINDOW_END, RANK})


def min_ts(batch: Batch) -> npt.NDArray[np.int64]:
    return batch.columns.get(MIN_TS, batch.ts)


def max_ts(batch: Batch) -> npt.NDArray[np.int64]:
    return batch.columns.get(MAX_TS, batch.ts)


def payload(batch: Batch) -> dict[str, npt.NDArray[Any]]:
    """The columns that are fields of the records (reserved columns left out)."""
    return {name: column for name, column in batch.columns.items() if name not in RESERVED}


def identities(batch: Batch, result_keys: Sequence[str]) -> list[str]:
    """Deterministic identity of each record (see the module docstring)."""
    if WINDOW_START in batch.columns:
        keys = [batch.columns[k].tolist() for k in result_keys]
        joined = [":".join(map(str, parts)) for parts in zip(*keys, strict=True)] if keys else None
        starts = batch.columns[WINDOW_START].tolist()
        ends = batch.columns[WINDOW_END].tolist()
        return [
            f"{batch.source}|{s}|{e}|{joined[i] if joined else ''}"
            for i, (s, e) in enumerate(zip(starts, ends, strict=True))
        ]
    if len(result_keys) == 1:
        return list(map(str, batch.columns[result_keys[0]].tolist()))
    if result_keys:
        keys = [batch.columns[k].tolist() for k in result_keys]
        return [":".join(map(str, parts)) for parts in zip(*keys, strict=True)]
    texts: list[str] = place_identities(batch).to_pylist()
    return texts


def identities_at(batch: Batch, result_keys: Sequence[str], rows: npt.NDArray[Any]) -> list[str]:
    """`identities` of the records at `rows`, taking only the columns identities read (a join's
    output carries many more)."""
    read = {*result_keys, WINDOW_START, WINDOW_END}
    columns = {name: column for name, column in batch.columns.items() if name in read}
    slim = Batch(batch.source, batch.ts, batch.partition, batch.offset, columns)
    return identities(slim.take(rows), result_keys)


def place_identities(batch: Batch) -> pa.Array:
    """`source@partition:offset` of each record, as an Arrow string array (records without
    result keys or window: their place in the input is their identity)."""
    places = [pc.cast(pa.array(a), pa.string()) for a in (batch.partition, batch.offset)]
    return pc.binary_join_element_wise(f"{batch.source}@", places[0], ":", places[1], "")


def stream(
    source: str,
    ts: npt.NDArray[np.int64],
    partition: npt.NDArray[Any],
    columns: Mapping[str, npt.NDArray[Any]],
) -> Batch:
    """An operator's output batch (offsets are positions within the batch)."""
    return Batch(
        source=source,
        ts=np.asarray(ts, np.int64),
        partition=np.asarray(partition, np.int32),
        offset=np.arange(len(ts), dtype=np.int64),
        columns=dict(columns),
    )
