"""Liveness of the worker loop: alive while every partition it reads advances (or has nothing
waiting) and what it fed gets committed.

The pod's livenessProbe calls `/healthz`. A worker thread that still runs is not enough: a loop
blocked in a Kafka client call that never returns (librdkafka's `send_offsets_to_transaction`
ignores its timeout while the group coordinator it cached is gone, librdkafka issues 5456 and
5511: after a broker restart the loop waited on it for good), a partition whose fetches stopped
with input waiting while the others still return records (librdkafka issue 5591: a partition
left paused for good), or a loop that goes on fetching and feeding while its commits no longer
end (the commit thread blocked: output and positions stop moving, the watermark a reader sees
with them) are alive threads that do no useful work. So the loop is alive when

- it has come back to fetch input within the last `stall_s` seconds,
- each partition it reads (assigned and not paused) returned records within the last `stall_s`
  seconds, or had nothing past the records returned, by the high watermark the consumer last saw
  (a cached value: no request to the brokers, whose answer could block), and
- no commit ended while it fed input live for longer than `stall_s` seconds plus the commit
  interval (commits stopped while the loop works on), and input it fed is committed within
  `GIVE_UP_S` (the transaction's timeout) anyway: a broker outage stops the feeding as well as
  the commits, and only a commit that outlives its transaction is stuck (`outage`).

Paused partitions (a migration's markers, a replay's limit) are not expected to advance, and a
partition starts its clock when it is read again; a worker holding no partitions has nothing to
do. Input fed during a replay is committed already (commits wait for the replay's end), so it
waits for no commit. Until the first fetch (the worker restores its state first) only the
thread counts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

from streamshift_engine.runtime.outage import GIVE_UP_S

Read = tuple[str, int]  # a partition read: (plan input, partition), the source's `Position`
CHECKS_PER_STALL = 10  # partitions that returned nothing are looked at this often per `stall_s`
CHECK_MAX_S = 1.0  # and at least once a second


class Progress:
    """When the loop last fetched, when each partition it reads last advanced or had nothing
    to do, and since when fed input waits for a commit."""

    def __init__(
        self,
        stall_s: float,
        commit_interval_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stall_s = stall_s
        self.commit_limit_s = stall_s + commit_interval_s
        self.check_s = min(CHECK_MAX_S, stall_s / CHECKS_PER_STALL)
        self.clock = clock
        self.fetched: float | None = None  # None until the first fetch
        self.advanced: dict[Read, float] = {}  # per partition read
        self.checked = float("-inf")
        self.uncommitted: float | None = None  # when input was fed live after the last commit
        self.fed_at: float | None = None  # when input was last fed live

    def fetch_returned(
        self,
        returned: Collection[Read],
        reading: Collection[Read],
        waiting: Callable[[list[Read]], Collection[Read]],
    ) -> None:
        """A fetch returned records of the partitions `returned` (maybe none) while the loop
        reads `reading`; `waiting(quiet)` tells which of the partitions `quiet` have input
        waiting, asked at most every `check_s` seconds, of those that returned nothing."""
        now = self.clock()
        self.fetched = now
        advanced = {key: self.advanced.get(key, now) for key in reading}
        for key in returned:
            if key in advanced:
                advanced[key] = now
        if now - self.checked >= self.check_s:
            quiet = [key for key, at in advanced.items() if at < now]
            if quiet:
                self.checked = now
                busy = set(waiting(quiet))
                advanced.update((key, now) for key in quiet if key not in busy)
        self.advanced = advanced

    def fed(self, replaying: bool) -> None:
        """The loop fed input: live input waits for a commit; replayed input is committed."""
        if replaying:
            self.uncommitted = None
            return
        self.fed_at = self.clock()
        if self.uncommitted is None:
            self.uncommitted = self.fed_at

    def committed(self) -> None:
        """A commit ended: what was fed before it is committed."""
        self.uncommitted = None

    def problem(self) -> str | None:
        """Why the loop is not alive, or None while it is."""
        if self.fetched is None:
            return None
        now = self.clock()
        if now - self.fetched > self.stall_s:
            return f"the worker loop has not fetched input for {now - self.fetched:.0f} s"
        stalled = [(at, key) for key, at in list(self.advanced.items()) if now - at > self.stall_s]
        if stalled:
            at, (name, partition) = min(stalled)
            return (
                f"input of {name} partition {partition} has waited {now - at:.0f} s and no "
                "fetch returned it"
            )
        uncommitted, fed_at = self.uncommitted, self.fed_at
        if uncommitted is None or fed_at is None:
            return None
        waited = now - uncommitted
        if fed_at - uncommitted > self.commit_limit_s or waited > max(
            self.commit_limit_s, GIVE_UP_S
        ):
            return f"input fed {waited:.0f} s ago is not committed yet: commits stopped"
        return None
