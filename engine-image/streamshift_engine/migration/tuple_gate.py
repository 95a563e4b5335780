"""UniMiCo's hook on a tuple-based controlling window (seed 000 (Pham et al.), 3.1.1 equation
(2), 3.2.2).

A `ROWS n` window with slide `s` fires after every `s`-th tuple it counts, over its last `n`
tuples; which tuples close a window depends on how many came before, which no event time tells.
`TupleGate` wraps the plan's controlling `RowsWindowAggregate` inside a running `Pipeline` (it
replaces the operator object in `Pipeline.operators`, so the engine needs no change) and splits the
window's results at a boundary event time `C` by window start (the event time of a window's
oldest tuple):

- origin (`watch(C)`): counts the tuples reaching the window before `C` and from `C` on, keeps
  only results whose window starts before `C`, and knows when the count before `C` is final (a
  tuple at or after `C` arrived, or a watermark past `C` reached the window; its input is ordered
  by event time). That count gives equation (2)'s `delta` and the target's `s - delta`
  (`timestamps.counted_tuple_discard`).
- target (`open(C, discard, history_complete)`): drops every tuple before `C`; the first
  `s - delta` tuples from `C` only complete the slide the origin had begun, so its count starts
  at `-(s - delta) mod s` and it fires after the same tuples as the origin. (The engine's windows
  end on the slide grid and reach back `n` tuples, so those tuples stay in the window: a window
  starting at or after `C` may hold them.) While it holds fewer than `n` tuples of its own, the
  windows it fires are partial here (whole at the origin) and are suppressed, unless the origin
  had counted nothing before `C` (then both saw the same stream from its first tuple).

Only a global window (no `group_by`: one group, one count) can be gated; a keyed `ROWS` window
counts per key, and a rare key's last `n` tuples may be arbitrarily old.
"""

from __future__ import annotations

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.stream import WINDOW_START
from streamshift_engine.pipeline import Pipeline
from streamshift_engine.windows.rows_aggregate import RowsWindowAggregate

NEVER = np.iinfo(np.int64).min


class TupleGate(Operator):
    """A global `RowsWindowAggregate` with UniMiCo's counting (origin) or discarding (target)."""

    def __init__(self, inner: RowsWindowAggregate) -> None:
        super().__init__(inner.id, inner.keyed)
        if inner.group_by:
            raise ValueError(f"{inner.id}: only a global ROWS window can be gated")
        self.inner = inner
        self.stores = inner.stores
        self.size = inner.windows.size
        self.boundary: int | None = None
        self.counted_before = self._seen()
        self.counted_from = 0
        self.settled = NEVER
        self.warming = 0
        self.opened = False

    @classmethod
    def install(cls, pipeline: Pipeline, node_id: str) -> TupleGate:
        """Wrap the pipeline's operator `node_id` (once) and return its gate."""
        for index, operator in enumerate(pipeline.operators):
            if operator.id == node_id:
                if isinstance(operator, TupleGate):
                    return operator
                if not isinstance(operator, RowsWindowAggregate):
                    raise ValueError(f"{node_id} is not a ROWS window aggregate")
                gate = cls(operator)
                pipeline.operators[index] = gate
                return gate
        raise KeyError(node_id)

    def watch(self, boundary: int | None) -> None:
        """Origin: count from here, and emit only windows starting before `boundary` (which
        must lie after every tuple counted so far); None: emit every window again. A gate that
        was a target's (a chained migration: the previous target is the next origin) becomes
        an origin's: it counts anew, and still suppresses its warm-up windows."""
        self.boundary = boundary
        self.opened = False
        self.counted_before = self._seen()
        self.counted_from = 0
        self.settled = NEVER

    def _seen(self) -> int:
        """The tuples the window has counted since the stream began (its count's state)."""
        return sum(r[0][0] for r in self.inner.seen.groups.values() if r)

    def open(self, boundary: int, discard: int, history_complete: bool) -> None:
        """Target: take tuples from `boundary` on, less the first `discard` of them."""
        self.boundary = boundary
        resumed_count = -discard % self.inner.windows.slide
        if resumed_count:
            self.inner.seen.records(0, ()).append((resumed_count,))
        self.warming = 0 if history_complete else self.size - 1
        self.opened = True

    @property
    def count_before_final(self) -> bool:
        """Whether no tuple before the boundary can reach the window any more."""
        boundary = self.boundary
        return boundary is not None and (self.counted_from > 0 or self.settled >= boundary)

    def process(self, port: int, batch: Batch) -> list[Batch]:
        boundary = self.boundary
        if boundary is None:
            return self._fed(port, batch)
        if self.opened:
            return self._fed(port, batch.take(batch.ts >= boundary))
        before = int(np.count_nonzero(batch.ts < boundary))
        self.counted_before += before
        self.counted_from += len(batch) - before
        return [_starting_before(out, boundary) for out in self._fed(port, batch)]

    def _fed(self, port: int, batch: Batch) -> list[Batch]:
        """The window's output for `batch`, less the windows of its warm-up (fewer than `n`
        tuples of its own)."""
        warm = min(self.warming, len(batch))
        if warm:
            self.warming -= warm
            self.inner.process(port, batch.take(slice(0, warm)))
            batch = batch.take(slice(warm, None))
        return self.inner.process(port, batch) if len(batch) else []

    def advance(self, watermark: int) -> list[Batch]:
        self.settled = max(self.settled, watermark)
        return self.inner.advance(watermark)

    def flush(self) -> list[Batch]:
        self.settled = np.iinfo(np.int64).max
        return self.inner.flush()


def _starting_before(batch: Batch, boundary: int) -> Batch:
    return batch.take(batch.columns[WINDOW_START] < boundary)
