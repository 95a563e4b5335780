"""Liveness of the worker loop: alive while it advances, or while it has nothing to do.

The pod's livenessProbe calls `/healthz`. A worker thread that still runs is not enough: a loop
blocked in a Kafka client call that never returns (librdkafka's `send_offsets_to_transaction`
ignores its timeout while the group coordinator it cached is gone, librdkafka issues 5456 and
5511: after a broker restart the loop waited on it for good) or a partition whose fetches stopped
with input waiting are alive threads that do no work. So the loop is alive when

- it has come back to fetch input within the last `stall_s` seconds, and
- within the last `stall_s` seconds a fetch returned records, or nothing waited: no partition it
  reads (assigned and not paused) had records past the ones it returned, by the high watermark
  the consumer last saw (a cached value: no request to the brokers, whose answer could block).

Paused partitions (a migration's markers, a replay's limit) are not expected to advance, and a
worker holding no partitions has nothing to do. Until the first fetch (the worker restores its
state first) only the thread counts.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Progress:
    """When the loop last fetched, and last advanced or had nothing to do."""

    def __init__(self, stall_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.stall_s = stall_s
        self.clock = clock
        self.fetched: float | None = None  # None until the first fetch
        self.advanced = clock()

    def fetch_returned(self, records: bool, waiting: Callable[[], bool]) -> None:
        """A fetch returned (with records or not); `waiting` tells whether input waits, asked
        only when it returned none."""
        now = self.clock()
        self.fetched = now
        if records or not waiting():
            self.advanced = now

    def problem(self) -> str | None:
        """Why the loop is not alive, or None while it is."""
        if self.fetched is None:
            return None
        now = self.clock()
        if now - self.fetched > self.stall_s:
            return f"the worker loop has not fetched input for {now - self.fetched:.0f} s"
        if now - self.advanced > self.stall_s:
            return f"input has waited {now - self.advanced:.0f} s and no fetch returned it"
        return None
