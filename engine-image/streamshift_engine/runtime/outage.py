"""Riding out Kafka outages: transactional calls retried while retriable, and a wait for a commit
that gives up, with a clear error, once the commit is stuck.

librdkafka reconnects on its own: after a broker restart the consumer fetches again and the
producer's calls go on. Two things need the worker's help. A transactional call that fails with a
retriable error (a timeout while the broker is away) is made again until `deadline`. And a call
may never return: `send_offsets_to_transaction` ignores its timeout while the group coordinator
it cached is gone (librdkafka issues 5456 and 5511), and on the local stack it stayed blocked
after the broker came back, 2 broker restarts out of 2, with the loop waiting on it. A commit
still running `STUCK_S` after the brokers answer again (or `GIVE_UP_S` after it began, the
transaction timeout after which the broker aborts it anyway) is `CommitStuck`: the worker exits
and the pod restarts it, which recovers exactly from its last snapshot and the committed offsets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as WaitTimeout

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

log = logging.getLogger("streamshift.worker")
STUCK_S = 8.0  # a commit still running this long after the brokers answer again is stuck
GIVE_UP_S = 60.0  # the producer's transaction.timeout.ms: the broker aborts the transaction then
CHECK_S = 1.0  # how often a waiting commit is looked at


def kafka_answers(bootstrap: str, timeout: float = 2.0) -> bool:
    """Whether a broker at `bootstrap` answers a metadata request within `timeout`, asked by a
    client of its own (one whose connections hold no request from before an outage)."""
    probe = AdminClient({"bootstrap.servers": bootstrap})
    try:
        probe.list_topics(timeout=timeout)
    except KafkaException:
        return False
    return True


class CommitStuck(RuntimeError):
    """A commit that does not end: the worker must restart to recover."""


def retrying(call: Callable[[float], None], timeout: float, deadline: float, what: str) -> None:
    """`call(timeout)` until it succeeds, again after each retriable error until `deadline`
    (monotonic seconds); any other error, or one past the deadline, is raised."""
    while True:
        try:
            call(timeout)
            return
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if error is None or not error.retriable() or time.monotonic() >= deadline:
                raise
            log.warning(f"{what} failed, trying again: {error.str()}", extra={"what": what})


def await_commit(
    commit: Future[None],
    began: float,
    reachable: Callable[[], bool],
    clock: Callable[[], float] = time.monotonic,
    check_s: float = CHECK_S,
) -> None:
    """Wait until `commit` (begun at `began`) ended; `CommitStuck` when it is still running
    `STUCK_S` after `reachable()` answered true (and stays so), or `GIVE_UP_S` after it began."""
    answered_since: float | None = None
    while True:
        try:
            commit.exception(timeout=check_s)
            return
        except WaitTimeout:
            pass
        now = clock()
        running = now - began
        if running >= GIVE_UP_S:
            raise CommitStuck(f"the Kafka commit has not ended after {running:.0f} s")
        if running < STUCK_S:
            continue
        if reachable():
            answered_since = now if answered_since is None else answered_since
            if now - answered_since >= STUCK_S:
                raise CommitStuck(
                    f"the Kafka commit has not ended after {running:.0f} s, though the brokers "
                    f"answer again since {now - answered_since:.0f} s (librdkafka issue 5511)"
                )
        else:
            answered_since = None
            log.warning("Kafka unreachable: the commit waits", extra={"waited_s": round(running)})
