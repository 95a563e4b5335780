"""Batched consume from a confluent-kafka Consumer's handle into packed columns (_fastconsume.c)."""

from typing import Literal, overload

from confluent_kafka import Consumer

class Payload:
    """A record's value in the consumer's memory (buffer protocol, read-only); the record is
    freed when the Payload is."""

    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

@overload
def consume(
    consumer: Consumer,
    client_id: str,
    topics: tuple[str, ...],
    max_messages: int,
    timeout: float,
    copy: Literal[True],
) -> tuple[list[bytes], bytes, bytes, bytes]: ...
@overload
def consume(
    consumer: Consumer,
    client_id: str,
    topics: tuple[str, ...],
    max_messages: int,
    timeout: float,
    copy: Literal[False],
) -> tuple[list[Payload], bytes, bytes, bytes]: ...
@overload
def consume(
    consumer: Consumer,
    client_id: str,
    topics: tuple[str, ...],
    max_messages: int,
    timeout: float,
    copy: bool,
) -> tuple[list[bytes] | list[Payload], bytes, bytes, bytes]: ...
def payloads_alive() -> int:
    """How many Payload objects (records held) exist now."""
