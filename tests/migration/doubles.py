"""A test double for the engine instance: per-partition tumbling count and sum of `m` by `k`.

It follows the engine contract the protocols rely on (docs/design/engine-api.md): records are
released once the watermark, the minimum over the instance's input partitions of the largest
event time fed, is strictly greater than their time; windows `[k*size, (k+1)*size)` fire when
their end is `<= watermark`; snapshots hold open windows only. It stands in for
`streamshift_engine.runner.Instance` in the protocol phase tests.
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch, results_from_mapping

Window = tuple[int, int, int]


class TumblingSum:
    def __init__(self, size: int, partitions: list[tuple[str, int]]) -> None:
        self.size = size
        self.max_fed: dict[tuple[str, int], int] = {}
        self.partitions = partitions
        self.pending: list[tuple[int, int, int, int]] = []
        self.windows: dict[Window, list[int]] = defaultdict(lambda: [0, 0, 2**62, 0])

    def feed(self, input_name: str, partition: int, batch: Batch) -> None:
        self.max_fed[(input_name, partition)] = int(batch.ts[-1])
        for ts, k, m in zip(
            batch.ts.tolist(), batch.columns["k"].tolist(), batch.columns["m"].tolist(), strict=True
        ):
            self.pending.append((ts, partition, k, m))

    def _watermark(self) -> int | None:
        if any(tp not in self.max_fed for tp in self.partitions):
            return None
        return min(self.max_fed[tp] for tp in self.partitions)

    def poll(self) -> list[ResultBatch]:
        watermark = self._watermark()
        return [] if watermark is None else self._advance(watermark)

    def flush(self) -> list[ResultBatch]:
        return self._advance(2**62)

    def _advance(self, watermark: int) -> list[ResultBatch]:
        released = sorted(r for r in self.pending if r[0] < watermark)
        self.pending = [r for r in self.pending if r[0] >= watermark]
        for ts, partition, k, m in released:
            state = self.windows[(partition, ts // self.size * self.size, k)]
            state[0] += 1
            state[1] += m
            state[2] = min(state[2], ts)
            state[3] = max(state[3], ts)
        fired = sorted(w for w in self.windows if w[1] + self.size <= watermark)
        rows = [(w, self.windows.pop(w)) for w in fired]
        if not rows:
            return []
        return [
            results_from_mapping(
                "sum",
                {
                    "partition": [w[0] for w, _ in rows],
                    "window_start": [w[1] for w, _ in rows],
                    "window_end": [w[1] + self.size for w, _ in rows],
                    "min_ts": [s[2] for _, s in rows],
                    "max_ts": [s[3] for _, s in rows],
                    "keys": {"k": np.array([w[2] for w, _ in rows])},
                    "values": {"count": [s[0] for _, s in rows], "sum": [s[1] for _, s in rows]},
                },
            )
        ]

    def snapshot(self) -> bytes:
        return json.dumps([[list(w), s] for w, s in self.windows.items()]).encode()

    def restore(self, data: bytes) -> None:
        for window, state in json.loads(data):
            self.windows[(window[0], window[1], window[2])] = state

    def state_bytes(self) -> int:
        return 32 * len(self.windows)
