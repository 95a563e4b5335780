"""Batched consume from a confluent-kafka Consumer's handle into packed columns (_fastconsume.c)."""

from confluent_kafka import Consumer

def consume(
    consumer: Consumer, client_id: str, topics: tuple[str, ...], max_messages: int, timeout: float
) -> tuple[list[bytes], bytes, bytes, bytes]:
    """Up to `max_messages` records within `timeout` seconds: values, and packed int32
    partitions, int64 offsets and int32 indices into `topics`; KafkaException for an error
    record."""
