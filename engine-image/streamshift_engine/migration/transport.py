"""The message transport between a migration's coordinator, origin(s) and target(s).

Protocols only `send` and `receive` `Message`s by participant name; they never assume delivery
order or timing. `InProcessTransport` delivers in the same process on a logical clock (`tick`)
with an injectable delay and reordering: each message waits a pseudo-random number of ticks in
`[0, max_delay]` drawn from a seeded generator, so a test run is reproducible from its seed and a
later message can overtake an earlier one. The HTTP transport of the worker runtime implements
the same `Transport` protocol.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Message:
    """One protocol message: who sends it to whom, what it is, and its fields."""

    sender: str
    recipient: str
    kind: str
    body: dict[str, Any] = field(default_factory=dict)


class Transport(Protocol):
    def send(self, message: Message) -> None: ...

    def receive(self, recipient: str) -> list[Message]: ...


@dataclass(order=True, slots=True)
class _Pending:
    due: int
    tiebreak: float
    sequence: int
    message: Message = field(compare=False)


class InProcessTransport:
    """Delivery on a logical clock, delayed and reordered deterministically from `seed`."""

    def __init__(self, seed: int = 0, max_delay: int = 0) -> None:
        self._random = random.Random(seed)
        self._max_delay = max_delay
        self._now = 0
        self._sequence = 0
        self._pending: list[_Pending] = []
        self.sent = 0

    def send(self, message: Message) -> None:
        delay = self._random.randint(0, self._max_delay)
        self._pending.append(
            _Pending(self._now + delay, self._random.random(), self._sequence, message)
        )
        self._sequence += 1
        self.sent += 1

    def receive(self, recipient: str) -> list[Message]:
        """Messages for `recipient` that are due now, in delivery (not sending) order."""
        due = sorted(
            p for p in self._pending if p.due <= self._now and p.message.recipient == recipient
        )
        for pending in due:
            self._pending.remove(pending)
        return [p.message for p in due]

    def tick(self) -> None:
        self._now += 1

    def in_flight(self) -> int:
        return len(self._pending)
