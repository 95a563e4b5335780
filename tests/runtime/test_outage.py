"""Riding out Kafka outages without the stack: a commit that never ends is `CommitStuck` soon
after the brokers answer again (and not while they are away), a retriable error is tried again,
any other error is raised at once."""

from __future__ import annotations

import itertools
import queue
import time
from concurrent.futures import Future
from types import SimpleNamespace
from typing import cast

import pytest
from confluent_kafka import KafkaError, KafkaException
from streamshift_engine.runtime.loop import Command, Worker
from streamshift_engine.runtime.outage import (
    GIVE_UP_S,
    STUCK_S,
    CommitStuck,
    await_commit,
    retrying,
)


class Clock:
    """Seconds that pass only when the code under test looks at them: `step` each time."""

    def __init__(self, step: float) -> None:
        self.ticks = itertools.count()
        self.step = step

    def __call__(self) -> float:
        return next(self.ticks) * self.step


def test_a_commit_that_never_ends_is_stuck_once_the_brokers_answer_again() -> None:
    clock = Clock(1.0)
    answers = iter([False] * 20 + [True] * 1000)  # the brokers are away 20 checks, then back
    asked: list[float] = []

    def reachable() -> bool:
        asked.append(clock())
        return next(answers)

    with pytest.raises(CommitStuck, match="answer again"):
        await_commit(Future(), 0.0, reachable, clock, check_s=0.001)
    assert len(asked) >= 20 + 1
    back = asked[20]
    assert asked[-1] - back >= STUCK_S / 2  # the clock ticks twice per check
    assert asked[-1] < GIVE_UP_S


def test_a_commit_waiting_for_brokers_that_stay_away_gives_up_at_the_transaction_timeout() -> None:
    clock = Clock(1.0)
    with pytest.raises(CommitStuck, match="has not ended after"):
        await_commit(Future(), 0.0, lambda: False, clock, check_s=0.001)
    assert clock() >= GIVE_UP_S


def test_a_commit_that_ends_is_waited_for_and_its_error_left_to_the_caller() -> None:
    done: Future[None] = Future()
    done.set_exception(KafkaException(KafkaError(KafkaError._FENCED)))
    begin = time.monotonic()
    await_commit(done, 0.0, lambda: True)
    assert time.monotonic() - begin < 0.5


def test_retriable_errors_are_tried_again_and_others_raised() -> None:
    calls: list[float] = []

    def flaky(timeout: float) -> None:
        calls.append(timeout)
        if len(calls) < 3:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "away", retriable=True))

    retrying(flaky, 5.0, time.monotonic() + 60, "commit_transaction")
    assert calls == [5.0, 5.0, 5.0]

    def fenced(_: float) -> None:
        raise KafkaException(KafkaError(KafkaError._FENCED, "fenced", fatal=True))

    with pytest.raises(KafkaException):
        retrying(fenced, 5.0, time.monotonic() + 60, "commit_transaction")

    def away(_: float) -> None:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "away", retriable=True))

    with pytest.raises(KafkaException):  # past its deadline a retriable error is raised too
        retrying(away, 5.0, time.monotonic() - 1, "commit_transaction")


def test_a_stuck_commit_in_a_control_call_ends_the_worker() -> None:
    """A role's action that commits (a state-transfer origin's snapshot) meets the stuck
    commit: its caller gets the error and the loop raises it, so the worker exits and is
    restarted, instead of answering every later call with the same error."""
    fake = SimpleNamespace(commands=queue.Queue(), _catch_up=lambda: None, flush=lambda: None)

    def stuck(_: Worker) -> None:
        raise CommitStuck("the Kafka commit has not ended after 61 s")

    def refused(_: Worker) -> None:
        raise ValueError("no such role")

    other = Command(refused)
    fake.commands.put(other)
    Worker._commands(cast(Worker, fake))  # any other error goes to the caller alone
    assert isinstance(other.future.exception(), ValueError)
    command = Command(stuck)
    fake.commands.put(command)
    with pytest.raises(CommitStuck):
        Worker._commands(cast(Worker, fake))
    assert isinstance(command.future.exception(), CommitStuck)
