"""Batched consume from a confluent-kafka Consumer's handle into packed columns (_fastconsume.c)."""

from confluent_kafka import Consumer

class Payload:
    """A record's value in the consumer's memory (buffer protocol, read-only); the record is
    freed when the Payload is."""

    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

def consume(
    consumer: Consumer,
    client_id: str,
    topics: tuple[str, ...],
    max_messages: int,
    timeout: float,
) -> tuple[list[Payload], bytes, bytes, bytes]:
    """Values (Payloads holding the records), packed int32 partitions, int64 offsets and int32
    topic indices of up to `max_messages` records read within `timeout` seconds."""

def wake(consumer: Consumer, client_id: str) -> None:
    """End a consume waiting on the consumer's queue in another thread now (with what it holds);
    with none waiting, the next consume returns at once."""

def payloads_alive() -> int:
    """How many Payload objects (records held) exist now."""
