"""The verifier's comparison (no Kafka): each kind of wrong output fed to it (missing, extra,
differing and duplicate results, records decoded otherwise than the workers decode them) is
found, in both directions, and output written as the workers write it passes when it is exact."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from streamshift_engine.events.wire import Schema, decode_json
from streamshift_operator.migration.verification_diff import (
    Reference,
    compare,
    extent,
    plan_of,
    reference,
)
from verify_cases import PARTITIONS, SUMS, WINDOW_MS, sums_input, worker_output


def _setup() -> tuple[Reference, list[dict[str, Any]], int]:
    inputs = sums_input()
    expected = reference(plan_of({"inline": SUMS}), PARTITIONS, inputs)
    assert expected.watermark is not None
    return expected, worker_output({"inline": SUMS}, inputs), expected.watermark


def test_output_written_as_the_workers_write_it_is_exact() -> None:
    expected, output, bound = _setup()
    verdict = compare(expected, output, bound)
    assert verdict.exact, verdict.message
    assert verdict.compared == 10  # windows [0, 1 s) ... [4 s, 5 s) of two keys
    assert (verdict.missing, verdict.extra, verdict.differing, verdict.duplicate) == (0, 0, 0, 0)
    assert {r["id"] for r in output} >= {"sums|0|1000|0", "sums|4000|5000|1"}


def test_two_whole_windows_missing_are_missing() -> None:
    expected, output, bound = _setup()
    lost = [r for r in output if r["window_end"] not in (2000, 3000)]
    verdict = compare(expected, lost, bound)
    assert not verdict.exact
    assert verdict.missing == 4 and verdict.extra == verdict.differing == 0
    assert "sums|1000|2000|0" in (verdict.message or "")


def test_partial_windows_with_wrong_sums_are_extra_and_differing() -> None:
    """The parallel-track failure: a target's partially filled windows, under ids that look
    right (another window start) and under the right id with a wrong sum."""
    expected, output, bound = _setup()
    partial = {"id": "sums|1500|2000|0", "window_start": 1500, "window_end": 2000, "k": 0}
    wrong = [{**r, "total": r["total"] - 3} if r["id"] == "sums|2000|3000|1" else r for r in output]
    verdict = compare(expected, [*wrong, {**partial, "total": 71}], bound)
    assert not verdict.exact
    assert (verdict.extra, verdict.differing, verdict.missing) == (1, 1, 0)


def test_a_duplicate_is_found() -> None:
    expected, output, bound = _setup()
    verdict = compare(expected, [*output, output[3]], bound)
    assert not verdict.exact
    assert verdict.duplicate == 1 and verdict.missing == verdict.extra == 0


def test_a_repeated_id_with_one_right_copy_is_a_duplicate_not_a_difference() -> None:
    expected, output, bound = _setup()
    verdict = compare(expected, [*output, {**output[0], "total": -1}], bound)
    assert (verdict.duplicate, verdict.differing, verdict.exact) == (1, 0, False)


def test_a_bad_unread_field_is_decoded_as_the_worker_decodes_it() -> None:
    """`note` is in the schema but the plan never reads it: the worker decodes a record whose
    `note` is malformed, so the reference must count it too."""
    inputs = sums_input(note="not a number")
    plan = plan_of({"inline": SUMS})
    full = Schema("S", tuple(plan.inputs[0].schema.items()), "ts")  # type: ignore[arg-type]
    records = inputs["S"][0]
    _, dead = decode_json("S", [v for _, v in records], [0] * 60, list(range(60)), full)
    assert len(dead) == 60  # decoded with the full schema, every record would be dropped
    expected = reference(plan, PARTITIONS, inputs)
    assert expected.watermark is not None
    by_id = {e.record["id"]: e.record for e in expected.results}
    assert by_id["sums|0|1000|0"]["total"] == sum(range(10))
    verdict = compare(expected, worker_output({"inline": SUMS}, inputs), expected.watermark)
    assert verdict.exact, verdict.message


def test_a_record_with_a_bad_read_field_is_dropped_by_both() -> None:
    inputs = sums_input()
    inputs["S"][0][5] = (5, orjson.dumps({"ts": 500, "k": 0, "m": "x", "note": 7}))
    expected = reference(plan_of({"inline": SUMS}), PARTITIONS, inputs)
    by_id = {e.record["id"]: e.record for e in expected.results}
    assert by_id["sums|0|1000|0"]["total"] == sum(range(10)) - 5


def test_only_results_final_at_or_below_the_bound_are_compared() -> None:
    expected, output, _ = _setup()
    early = [r for r in output if r["window_end"] <= 2000]
    verdict = compare(expected, early, 2000)
    assert verdict.exact and verdict.compared == 4 and verdict.bound == 2000
    assert not compare(expected, early, 3000).exact  # windows ending at 3 s are due


def test_rows_windows_partial_window_beside_the_right_one_is_extra() -> None:
    """Seed q2 (`sum over Rows 5`): the worker's target wrote `q2|25850|25851|...` sum 71
    beside the correct `q2|25825|25851|...` sum 292; here the same shape."""
    rows = [(i, orjson.dumps({"ts": 1000 + 25 * i, "l": 1, "m": i})) for i in range(40)]
    expected = reference(plan_of({"builtin": "q2"}), 1, {"S": {0: rows}})
    assert expected.watermark is not None
    right = next(e.record for e in expected.results if e.record["row"] == "S@0:20")
    output = [e.record for e in expected.results]
    partial = {**right, "id": right["id"].replace(f"|{right['window_start']}|", "|1500|")}
    verdict = compare(expected, [*output, {**partial, "window_start": 1500, "sum": 20}], 2000)
    assert verdict.extra == 1 and not verdict.exact


def test_a_result_without_a_window_is_extra_only_when_the_reference_has_it_nowhere() -> None:
    expected = Reference(results=[], open_ids=frozenset({"j|-1|-1|later"}), watermark=100)
    pending = {"id": "j|-1|-1|later", "window_start": -1, "window_end": -1}
    unknown = {"id": "j|-1|-1|never", "window_start": -1, "window_end": -1}
    assert compare(expected, [pending], 100).exact
    verdict = compare(expected, [pending, unknown], 100)
    assert verdict.extra == 1 and not verdict.exact


@pytest.mark.parametrize("total", [45.0 + 1e-12, 45])
def test_float_sums_in_another_order_still_compare_equal(total: float) -> None:
    expected, output, bound = _setup()
    summed = [{**r, "total": total} if r["id"] == "sums|0|1000|0" else r for r in output]
    assert compare(expected, summed, bound).exact


def test_the_extent_is_the_longest_window() -> None:
    expected, _, _ = _setup()
    assert extent(expected.results) == WINDOW_MS
