"""The end offsets of a query's input partitions, read from Kafka (the input rate's source).

Blocking (confluent-kafka's admin client); the reconcile glue calls it in a thread. One admin
client per bootstrap address, kept for the operator's life, as each query is read every pass.
"""

from collections.abc import Iterable

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec

TIMEOUT_S = 5.0
_clients: dict[str, AdminClient] = {}


def end_offsets(bootstrap: str, topics: Iterable[tuple[str, int]]) -> dict[str, int]:
    """By `topic:partition`, the offset after the last record of each partition of each
    `(topic, partitions)`; raises `KafkaException` when Kafka does not answer in time."""
    admin = _clients.get(bootstrap)
    if admin is None:
        admin = _clients[bootstrap] = AdminClient(
            {"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000}
        )
    wanted = {
        TopicPartition(topic, partition): OffsetSpec.latest()  # type: ignore[no-untyped-call]
        for topic, count in topics
        for partition in range(count)
    }
    futures = admin.list_offsets(wanted, request_timeout=TIMEOUT_S)
    ends = {}
    for tp, future in futures.items():
        result = future.result()
        ends[f"{tp.topic}:{tp.partition}"] = int(result.offset)
    return ends
