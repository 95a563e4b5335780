"""`committed_offsets` asks again while the group coordinator is not ready, and only then.

A broker that has just started answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS until it
has loaded its offsets topic; the local stack's broker cannot be put in that state on demand, so
a consumer stand-in raises those errors here."""

from __future__ import annotations

from typing import Any, cast

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from streamshift_engine.runtime.source import committed_offsets


class Answers:
    """A consumer whose `committed` raises the given errors, then answers."""

    def __init__(self, *errors: int) -> None:
        self.errors = list(errors)
        self.calls = 0

    def committed(self, wanted: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        self.calls += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return [TopicPartition(tp.topic, tp.partition, 42) for tp in wanted]


def _ask(consumer: Any, timeout: float = 5.0) -> list[TopicPartition]:
    return committed_offsets(cast(Consumer, consumer), [TopicPartition("t", 0)], timeout, 0.01)


def test_a_coordinator_loading_is_asked_again_until_it_answers() -> None:
    consumer = Answers(KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NOT_COORDINATOR)
    assert [tp.offset for tp in _ask(consumer)] == [42]
    assert consumer.calls == 3


def test_other_errors_raise_at_once() -> None:
    consumer = Answers(KafkaError.GROUP_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException):
        _ask(consumer)
    assert consumer.calls == 1


def test_a_coordinator_never_ready_raises_once_the_timeout_passed() -> None:
    consumer = Answers(*[KafkaError.NOT_COORDINATOR] * 1000)
    with pytest.raises(KafkaException):
        _ask(consumer, timeout=0.2)
    assert 2 <= consumer.calls < 1000
