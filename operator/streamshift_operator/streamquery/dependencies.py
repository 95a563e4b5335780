"""What a StreamQuery depends on, checked: Kafka reachable with its topics as the spec says, the
snapshot store reachable, the last snapshot recent. Each check is a condition on the query's
status (`KafkaReady`, `SnapshotStoreReady`, `SnapshotsRecent`) with its reason; a failing one
makes the query Degraded, with a Warning Event (`streamquery/reconciler.py`).

Without them a query on a 4-partition topic that says 8, or on an unreachable bootstrap address,
kept an empty phase and the reason only in the operator's log, and one whose S3 endpoint was
unreachable crash-looped its workers while its status said Deploying and Degraded=False.

The Kafka and S3 checks call out (blocking clients, run in threads, short timeouts) at most once
every `CHECK_EVERY_S` per query (`Checks`); the reconciler's pass runs every 2 s and reuses the
last answer meanwhile. The snapshot age is read from what the workers report: no call.
"""

import asyncio
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import urllib3
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from minio import Minio
from minio.error import MinioException

from streamshift_operator.models.streamquery import StreamQuerySpec
from streamshift_operator.streamquery.observe import QueryView

KAFKA, STORE, SNAPSHOTS = "KafkaReady", "SnapshotStoreReady", "SnapshotsRecent"
TIMEOUT_S = 5.0  # each call out waits at most this long
CHECK_EVERY_S = 10.0  # a query's Kafka and S3 are looked at this often
STALE_INTERVALS = 3  # a last snapshot older than this many intervals (and `STALE_MIN_S`) is stale
STALE_MIN_S = 60.0


@dataclass(frozen=True)
class Finding:
    """One dependency's condition: its type, whether it holds, why."""

    condition: str
    ok: bool
    reason: str
    message: str


def kafka(spec: StreamQuerySpec, placed: bool) -> Finding:
    """Kafka answers and each source and sink topic has the spec's partition count; once the
    query is `placed` each exists too (before, the operator creates the missing ones).
    Blocking."""
    bootstrap = spec.kafka.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
    try:
        metadata = admin.list_topics(timeout=TIMEOUT_S)
    except KafkaException as error:
        return Finding(
            KAFKA,
            False,
            "KafkaUnreachable",
            f"Kafka at {bootstrap} (spec.kafka.bootstrapServers) is unreachable: {error}",
        )
    wanted = [(s.topic, s.partitions, "spec.sources") for s in spec.sources]
    wanted += [(s.topic, s.partitions, "spec.sinks") for s in spec.sinks]
    problems = []
    for topic, count, field in wanted:
        found = metadata.topics.get(topic)
        if found is None and placed:
            problems.append(f"topic {topic} ({field}) does not exist")
        elif found is not None and len(found.partitions) != count:
            problems.append(
                f"topic {topic} has {len(found.partitions)} partitions, {field} says {count}: "
                f"fix {field} or the topic"
            )
    if problems:
        return Finding(KAFKA, False, "TopicsMismatch", "; ".join(problems))
    return Finding(KAFKA, True, "TopicsReady", f"Kafka at {bootstrap} has every topic as specified")


def store(spec: StreamQuerySpec, access_key: str, secret_key: str) -> Finding:
    """The snapshot store answers with these credentials (a missing bucket is fine: the
    workers create it). Blocking."""
    endpoint = spec.snapshot.endpoint
    host = endpoint.removeprefix("https://").removeprefix("http://").rstrip("/")
    http = urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=TIMEOUT_S, read=TIMEOUT_S), retries=False
    )
    client = Minio(
        host,
        access_key=access_key,
        secret_key=secret_key,
        secure=endpoint.startswith("https://"),
        http_client=http,
    )
    try:
        client.bucket_exists(spec.snapshot.bucket)
    except MinioException as error:
        return Finding(
            STORE,
            False,
            "SnapshotStoreRefused",
            f"the snapshot store at {endpoint} (spec.snapshot.endpoint) refused: {error}",
        )
    except (urllib3.exceptions.HTTPError, OSError, ValueError) as error:
        return Finding(
            STORE,
            False,
            "SnapshotStoreUnreachable",
            f"the snapshot store at {endpoint} (spec.snapshot.endpoint) is unreachable: {error}",
        )
    finally:
        http.clear()
    return Finding(STORE, True, "SnapshotStoreReachable", f"{endpoint} answers")


def snapshots(
    last: datetime | None, since: datetime | None, interval_s: int, now: datetime
) -> Finding:
    """The last snapshot any worker reported is recent: within `STALE_INTERVALS` intervals
    (and `STALE_MIN_S`) of now, or of `since` (when the query started running) when there is
    none yet."""
    limit = max(STALE_MIN_S, STALE_INTERVALS * interval_s)
    reference = last or since
    if reference is None:
        return Finding(SNAPSHOTS, True, "NoSnapshotYet", "no snapshot taken yet")
    age = (now - reference).total_seconds()
    if age <= limit:
        what = "no snapshot yet" if last is None else f"the last snapshot is {age:.0f} s old"
        return Finding(SNAPSHOTS, True, "SnapshotsRecent", what)
    what = "no snapshot" if last is None else "no new snapshot"
    return Finding(
        SNAPSHOTS,
        False,
        "SnapshotsStale",
        f"{what} for {age:.0f} s (spec.snapshot.intervalSeconds is {interval_s})",
    )


class Checks:
    """The Kafka and S3 findings of each query, looked at again once `CHECK_EVERY_S` passed."""

    def __init__(self, every_s: float = CHECK_EVERY_S) -> None:
        self.every_s = every_s
        self.found: dict[str, tuple[float, list[Finding], bool]] = {}

    async def findings(
        self, key: str, spec: StreamQuerySpec, placed: bool, access_key: str, secret_key: str
    ) -> list[Finding]:
        """The findings of the query under `key` (its uid), at most `every_s` old (looked at
        again at once when the query was placed meanwhile)."""
        known = self.found.get(key)
        fresh = known is not None and time.monotonic() - known[0] < self.every_s
        if known is not None and fresh and known[2] == placed:
            return known[1]
        found = list(
            await asyncio.gather(
                asyncio.to_thread(kafka, spec, placed),
                asyncio.to_thread(store, spec, access_key, secret_key),
            )
        )
        self.found[key] = (time.monotonic(), found, placed)
        return found


def snapshot_age(
    spec: StreamQuerySpec, view: QueryView, previous: list[dict[str, Any]], now: datetime
) -> Finding:
    """The age of the last snapshot a worker reports, against the interval; with none yet,
    the time since the query became Ready (its `previous` conditions)."""
    taken = [r.last_snapshot.created for r in view.reports.values() if r.last_snapshot]
    ready = [c for c in previous if c["type"] == "Ready" and c["status"] == "True"]
    since = _time(ready[0]["lastTransitionTime"]) if ready else None
    return snapshots(max(taken, default=None), since, spec.snapshot.interval_seconds, now)


def _time(value: str | datetime) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)
