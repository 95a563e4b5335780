"""The in-process transport: delays and reordering, reproducible from a seed."""

from streamshift_engine.migration.transport import InProcessTransport, Message


def deliveries(seed: int, max_delay: int) -> list[tuple[int, int]]:
    transport = InProcessTransport(seed=seed, max_delay=max_delay)
    for number in range(20):
        transport.send(Message("origin", "target", "n", {"n": number}))
    received = []
    for tick in range(max_delay + 1):
        received += [(tick, m.body["n"]) for m in transport.receive("target")]
        transport.tick()
    return received


def test_without_delay_messages_arrive_at_once_in_order_sent_or_shuffled() -> None:
    received = deliveries(seed=1, max_delay=0)
    assert sorted(n for _, n in received) == list(range(20))
    assert {tick for tick, _ in received} == {0}


def test_delays_reorder_deterministically_and_lose_nothing() -> None:
    received = deliveries(seed=7, max_delay=5)
    assert sorted(n for _, n in received) == list(range(20))
    assert [n for _, n in received] != list(range(20))
    assert max(tick for tick, _ in received) > 0
    assert received == deliveries(seed=7, max_delay=5)


def test_messages_go_only_to_their_recipient() -> None:
    transport = InProcessTransport()
    transport.send(Message("coordinator", "origin", "start"))
    assert transport.receive("target") == []
    assert [m.kind for m in transport.receive("origin")] == ["start"]
    assert transport.in_flight() == 0
