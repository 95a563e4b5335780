"""Kafka around the Spark jobs: the stack's endpoints, topic creation, reading an output topic.

An output topic is read `read_committed` (results of aborted transactions never count), from
the beginning of every partition up to its end at the time of reading. Result records are
decoded whether JSON (one result per record, `wire.encode_results_json`) or Arrow IPC (many per
record, `wire.encode_results_columnar`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from streamshift_engine.spark.session import cache_dir


def stack_env(path: Path | None = None) -> dict[str, str]:
    """The local stack's endpoints (`KAFKA_BOOTSTRAP`, `KUBECONFIG`, ...) written by `make up`."""
    env_file = path or cache_dir() / "run" / "stack.env"
    values: dict[str, str] = {}
    for line in env_file.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            name, value = line.split("=", 1)
            values[name.strip()] = value.strip()
    return values


def bootstrap_servers(explicit: str | None = None) -> str:
    """`explicit`, else `$KAFKA_BOOTSTRAP`, else the stack env file's."""
    return explicit or os.environ.get("KAFKA_BOOTSTRAP") or stack_env()["KAFKA_BOOTSTRAP"]


def ensure_topics(bootstrap: str, topics: Iterable[str], partitions: int) -> None:
    """Create the topics that do not exist yet with `partitions` partitions."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = set(admin.list_topics(timeout=10).topics)
    new = [NewTopic(t, partitions, 1) for t in sorted(set(topics)) if t not in existing]
    for topic, future in admin.create_topics(new).items() if new else []:
        try:
            future.result()
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise RuntimeError(f"cannot create topic {topic}: {error}") from error


def delete_topics(bootstrap: str, topics: Iterable[str]) -> None:
    """Delete topics (those missing are ignored)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics(list(topics)).values():
        try:
            future.result()
        except KafkaException as error:
            if error.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise


def read_committed(bootstrap: str, topic: str, timeout_s: float = 60.0) -> Iterator[bytes]:
    """Every committed record value of `topic`, partition by partition in offset order."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"streamshift-verify-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        if metadata.error is not None:
            raise RuntimeError(f"output topic {topic}: {metadata.error}")
        partitions = sorted(metadata.partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        pending = set(partitions)
        while pending:
            message = consumer.poll(timeout_s)
            if message is None:
                raise TimeoutError(f"{topic}: nothing in {timeout_s} s; partitions left {pending}")
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(message.partition())
                    continue
                raise RuntimeError(f"reading {topic}: {error}")
            yield message.value() or b""
    finally:
        consumer.close()


def decode_results(values: Iterable[bytes]) -> Iterator[Mapping[str, Any]]:
    """Result records from JSON or Arrow IPC record values."""
    for value in values:
        if value[:1] == b"{":
            yield orjson.loads(value)
        else:
            yield from pa.ipc.open_stream(value).read_all().to_pylist()
