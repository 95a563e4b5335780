"""The recovery after a split hand-off: what the output holds decides what a replacement emits,
and the origin roles say when they split their output (`Role.splitting_output`)."""

from __future__ import annotations

from streamshift_engine.events.results import ResultBatch, results_from_mapping
from streamshift_engine.events.wire import DeadLetter, result_ids
from streamshift_engine.runtime.published import Published, _letter_id


def windows(keys: list[int], start: int = 0) -> ResultBatch:
    n = len(keys)
    return results_from_mapping(
        "q",
        {
            "partition": [0] * n,
            "window_start": [start] * n,
            "window_end": [start + 10] * n,
            "min_ts": [start] * n,
            "max_ts": [start + 9] * n,
            "keys": {"k": keys},
            "values": {"v": [0] * n},
        },
    )


def letter(offset: int) -> DeadLetter:
    return DeadLetter("bid", 0, offset, "late", b"{}")


def test_only_what_the_output_lacks_goes_out() -> None:
    held = windows([1, 2, 3])
    ids = set(result_ids(held).to_pylist()[:2])  # the first two were published
    published = Published(ids, {("bid", 0, 7)}, 10, {("bid", 0): 100})
    results, letters = published.unpublished([held, windows([4])], [letter(7), letter(8)])
    assert [r["k"] for batch in results for r in batch.rows()] == [3, 4]
    assert [d.offset for d in letters] == [8]


def test_the_ledger_lasts_until_past_the_windows_and_the_input_read() -> None:
    published = Published(set(), set(), 110, {("bid", 0): 100, ("bid", 1): 50})
    assert not published.passed(None, {("bid", 0): 100, ("bid", 1): 50})
    assert not published.passed(110, {("bid", 0): 100, ("bid", 1): 50})  # window end 110 due
    assert not published.passed(111, {("bid", 0): 100, ("bid", 1): 49})
    assert published.passed(111, {("bid", 0): 100, ("bid", 1): 50})
    assert Published(set(), set(), -1, {}).passed(None, {})


def test_a_dead_letters_coordinates_come_from_its_headers() -> None:
    headers: list[tuple[str, str | bytes | None]] = [
        ("source", b"original header, not ours"),
        ("reason", b"late"),
        ("source", b"bid"),
        ("partition", b"3"),
        ("offset", b"12"),
        ("event", b"5"),
    ]
    assert _letter_id(headers, 1 << 20) == ("bid", 3, 12 * (1 << 20) + 5)
    assert _letter_id(headers[:-1], 1) == ("bid", 3, 12)
