"""`Monitor_Old_Box` (seed 001 (Zhu et al., Dynamic Plan Migration), section 4.2.4, Algorithm 3):
does the old plan hold old tuples?

Marking (section 4): the tuples in the old box at the migration start `T_M_start` are *old*, every
later one *new*; a combined tuple is old when any of its sub-tuples is. The engine releases a
tuple into the pipeline once the instance's watermark has passed its event time, so the old
tuples are exactly those with an event time before the watermark `A` at the start: a stored
tuple is old when the smallest event time it combines, its `min_ts` (lemma 2.2's `TS_min`), is
before `A`. Every operator keeps that timestamp with what it stores (`operators.stream`): a
`min_ts` column (tumbling joins, top-k candidates), the `min:_ts` partial (time-window panes) or
the `min_ts` field of a record list (symmetric joins, `ROWS` and session windows). Stores without
one hold no tuples (the progress of fired windows, tuple counters).

An operator's `IF_FINISHED` flag is set when none of its stores holds an old tuple; the old box is
finished when every flag is set and no old tuple waits upstream of the pipeline (in the log or the
instance's merge buffer): then the instance's watermark is at or after `A`.
"""

from __future__ import annotations

from typing import Protocol

from streamshift_engine.operators.base import Operator
from streamshift_engine.pipeline import Pipeline
from streamshift_engine.state.stores import KeyedRecordStore, StateStore, TableStore

MIN_COLUMNS = ("min_ts", "min:_ts")


def oldest(store: StateStore) -> int | None:
    """The smallest event time combined by any tuple the store holds (None: holds no tuple)."""
    if isinstance(store, TableStore):
        for name in MIN_COLUMNS:
            column = store.columns.get(name)
            if column is not None:
                return int(column.min()) if len(column) else None
        return None
    if isinstance(store, KeyedRecordStore) and "min_ts" in store.fields:
        at = store.fields.index("min_ts")
        return min((r[at] for records in store.groups.values() for r in records), default=None)
    return None


def finished(operator: Operator, split: int) -> bool:
    """The operator's `IF_FINISHED` flag: none of its states holds an old tuple."""
    return all(
        (first := oldest(store)) is None or first >= split for store in operator.stores.values()
    )


class Watched(Protocol):
    """What the check reads of an instance (an engine instance, or a role's port)."""

    @property
    def pipeline(self) -> Pipeline: ...

    def watermark(self) -> int | None: ...


def old_box_finished(instance: Watched, split: int) -> bool:
    """Whether the old plan holds no old tuple any more, nor will receive one."""
    watermark = instance.watermark()
    if watermark is None or watermark < split:
        return False
    return all(finished(operator, split) for operator in instance.pipeline.operators)
