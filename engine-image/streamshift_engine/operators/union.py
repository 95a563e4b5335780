"""`union`: two or more streams with the same fields merged into one (SQL's `UNION ALL`).

The union holds no state: each record of upstream port `p` (of `n`) passes on unchanged, in the
order it arrives, in its own partition, so the union's watermark is the minimum of its inputs'
(an instance's watermark is the minimum over all its input partitions: `runner.Instance`). What
changes is the record's name: records of different inputs may share a partition and offset, so
the union names its records itself, as a stream between operators is named by its producing node
(`operators.stream`): source the union's id, offset `offset * n + p`. That is unique, depends on
nothing but the record's own place (so on no slicing of the input), and is what downstream
operators that name results by their input records (top-k, joins, `ROWS` windows) see.
"""

from __future__ import annotations

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator


class Union(Operator):
    """Passes each upstream's records on, renamed to `<id>@partition:offset*n+port`."""

    def __init__(self, node_id: str, upstreams: int) -> None:
        super().__init__(node_id)
        self.upstreams = upstreams

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        offset = batch.offset * self.upstreams + port
        return [Batch(self.id, batch.ts, batch.partition, offset, batch.columns)]
