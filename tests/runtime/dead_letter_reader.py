"""Reading a worker's dead-letter topic in the runtime stack tests: each record's value and
headers, and the headers the worker added (reason, coordinates) after the original record's."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer

from .harness import Services


def dead_letters(services: Services, topic: str, expect: int) -> list[dict[str, Any]]:
    """The dead-letter topic's committed records: value, headers (in order), once `expect`
    arrived or 30 s passed."""
    consumer = Consumer(
        {
            "bootstrap.servers": services.kafka,
            "group.id": f"dlq-{time.time_ns()}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 4_000_000,
        }
    )
    consumer.subscribe([topic])
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while len(found) < expect and time.monotonic() < deadline:
        for message in consumer.consume(100, 0.5):
            if message.error() is None:
                found.append({"value": message.value(), "headers": list(message.headers() or [])})
    consumer.close()
    return found


def ours(letter: dict[str, Any]) -> dict[str, str]:
    """The worker's headers of a dead letter (after the original record's)."""
    headers = letter["headers"]
    count = int(dict(headers)["original-headers"])
    return {name: (value or b"").decode() for name, value in headers[count:]}
