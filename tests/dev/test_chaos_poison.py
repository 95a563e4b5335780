"""The chaos suite's reference for poison records (pure): raw records produced into an input
partition become dead letters with the engine's own reason (oversize: the worker's bound) and
shift the later offsets of that partition in the reference; event times moved far into the past
or the future keep the records' offsets and change the reference's output and dead letters."""

from __future__ import annotations

from collections import Counter

import pytest
from streamshift_dev.chaos.migrations import chaos_case
from streamshift_dev.chaos.streams import Poison, poison_reason, with_event_times, with_poison
from streamshift_dev.runtime_cases import Expected, records, reference
from streamshift_engine.events.wire import Schema


def test_poison_records_become_dead_letters_and_shift_their_partitions_later_offsets() -> None:
    expected = Expected(
        Counter({"r": 1}),
        Counter({("bid", 0, 3, "late", b"a"): 1, ("bid", 0, 9, "late", b"b"): 1,
                 ("bid", 1, 9, "late", b"c"): 1}),
    )  # fmt: skip
    case = chaos_case("unimico")
    big = b'{"pad": "' + b"x" * 1_000_100 + b'"}'
    poison = Poison("bid", 0, [big, b"{not json"], offsets=[5, 6])
    got = with_poison(expected, poison, case)
    assert got.results == expected.results
    letters = {(s, p, o): (r, v) for s, p, o, r, v in got.dead_letters}
    assert letters[("bid", 0, 3)] == ("late", b"a")  # before the poison: unmoved
    assert letters[("bid", 0, 11)] == ("late", b"b")  # after it: two further on
    assert letters[("bid", 1, 9)] == ("late", b"c")  # another partition: unmoved
    assert letters[("bid", 0, 5)] == (f"oversize: {len(big)} bytes, more than 1000000", big)
    assert letters[("bid", 0, 6)][1] == b"{not json" and letters[("bid", 0, 6)][0]
    assert sum(got.dead_letters.values()) == 5


def test_a_malformed_record_is_poison_and_a_well_formed_one_is_not() -> None:
    case = chaos_case("unimico")
    spec = case.plan.input("bid")
    schema = Schema("bid", tuple(spec.schema.items()), spec.time_field)  # type: ignore[arg-type]
    assert poison_reason(b"[1, 2]", schema)
    well_formed = records(case.feed.chunks[0], "x")[0][2]
    with pytest.raises(ValueError, match="not poison"):
        poison_reason(well_formed, schema)


def test_a_far_past_record_becomes_a_late_dead_letter_at_its_own_offset() -> None:
    case = chaos_case("unimico")
    batch = case.feed.chunks[2]["bid"]
    changed = with_event_times(case, 2, "bid", {0: 1_000})
    moved = changed.feed.chunks[2]["bid"]
    assert (
        int(moved.ts[0]) == 1_000
        and int(moved.columns[case.plan.input("bid").time_field][0]) == 1_000
    )
    assert moved.offset.tolist() == batch.offset.tolist()
    before, after = reference(case), reference(changed)
    new = after.dead_letters - before.dead_letters
    assert [(s, p, o) for s, p, o, _, _ in new] == [
        ("bid", int(batch.partition[0]), int(batch.offset[0]))
    ]
