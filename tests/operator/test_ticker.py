"""The Ticker: a tick that moved something runs the next one at once; stop ends the loop."""

import asyncio
import itertools

from streamshift_operator.ticker import Ticker

INTERVAL = 0.5


def test_a_tick_that_moved_is_followed_at_once_then_the_interval_applies() -> None:
    async def scenario() -> list[float]:
        loop = asyncio.get_running_loop()
        times: list[float] = []
        ticker = Ticker()

        async def tick() -> bool:
            times.append(loop.time())
            if len(times) == 4:
                ticker.stop("k")
            return len(times) <= 2  # the first two ticks moved, the third did not

        ticker.start("k", tick, INTERVAL)
        for _ in range(250):
            await asyncio.sleep(0.02)
            if not ticker.keys():
                break
        await ticker.close()
        return times

    times = asyncio.run(scenario())
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(times) == 4
    assert gaps[0] < INTERVAL / 2 and gaps[1] < INTERVAL / 2
    assert gaps[2] >= INTERVAL * 0.9


def test_a_failing_tick_is_retried_after_the_interval() -> None:
    async def scenario() -> int:
        calls = 0
        ticker = Ticker()

        async def tick() -> None:
            nonlocal calls
            calls += 1
            if calls == 3:
                ticker.stop("k")
            raise RuntimeError("the API server is away")

        ticker.start("k", tick, 0.01)
        for _ in range(500):
            await asyncio.sleep(0.02)
            if not ticker.keys():
                break
        await asyncio.sleep(0.1)  # a stopped ticker calls no more
        await ticker.close()
        return calls

    assert asyncio.run(scenario()) == 3
