"""Create a StreamQuery's missing Kafka topics with their configured partition counts.

An existing topic is left as it is; one whose partition count differs from the spec is reported
(the operator never repartitions a topic: keys would move between partitions and with them the
keyed state). Blocking (confluent-kafka), so the handlers call it in a thread.
"""

from collections.abc import Iterable

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

TIMEOUT_S = 10.0


class TopicError(RuntimeError):
    """Kafka refused or could not be reached; the message names the topic and what to fix."""


def ensure_topics(bootstrap: str, topics: Iterable[tuple[str, int]]) -> list[str]:
    """Create every missing `(topic, partitions)`; the names created, in the order given."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
    try:
        metadata = admin.list_topics(timeout=TIMEOUT_S)
    except KafkaException as error:
        raise TopicError(
            f"Kafka at {bootstrap} (spec.kafka.bootstrapServers) is unreachable: {error}"
        ) from None
    wanted = dict(topics)
    short = [
        f"topic {name} has {len(metadata.topics[name].partitions)} partitions, the spec says "
        f"{count}: fix spec.sources/spec.sinks or the topic"
        for name, count in wanted.items()
        if name in metadata.topics and len(metadata.topics[name].partitions) != count
    ]
    if short:
        raise TopicError("; ".join(short))
    missing = [
        NewTopic(name, count, 1) for name, count in wanted.items() if name not in metadata.topics
    ]
    if not missing:
        return []
    futures = admin.create_topics(missing, operation_timeout=TIMEOUT_S)
    created = []
    for name, future in futures.items():
        try:
            future.result()
            created.append(name)
        except KafkaException as error:
            if error.args[0].name() != "TOPIC_ALREADY_EXISTS":
                raise TopicError(f"cannot create topic {name}: {error}") from None
    return created
