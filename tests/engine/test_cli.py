"""`streamshift run` over a recorded input: results, dead letters with reasons, summary."""

from __future__ import annotations

from pathlib import Path

import orjson
import yaml
from streamshift_engine.cli import main
from streamshift_engine.plan.builtin import q1


def test_run_writes_results_and_dead_letters(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(
        b'{"ts":1000,"l":1,"m":10}\n{"ts":2000,"l":1,"m":20}\nnot json\n{"ts":3000,"l":1}\n'
        b'{"ts":1500,"l":1,"m":5}\n{"ts":4000,"l":1,"m":"x"}\n{"ts":5000,"l":1,"m":40}\n'
    )
    output, dead = tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    code = main(
        [
            "run",
            "--plan",
            "q2",
            "--input",
            str(source),
            "--output",
            str(output),
            "--dead-letters",
            str(dead),
            "--batch-size",
            "2",
        ]
    )
    assert code == 0
    results = [orjson.loads(line) for line in output.read_bytes().splitlines()]
    assert [r["sum"] for r in results] == [10, 30, 70]
    assert results[-1]["id"] == "q2|1000|5001|S@0:6"
    letters = [orjson.loads(line) for line in dead.read_bytes().splitlines()]
    reasons = {letter["offset"]: letter["reason"] for letter in letters}
    assert set(reasons) == {2, 3, 4, 5}
    assert reasons[4] == "late" and "bad json" in reasons[2] and "m" in reasons[3]


def test_run_takes_a_plan_file_and_routes_records_to_inputs(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(q1()))
    source = tmp_path / "in.jsonl"
    source.write_bytes(
        b'{"_input":"S","ts":1000,"l":1,"m":10}\n{"_input":"T","ts":1500,"l":1,"m":5}\n'
        b'{"_input":"T","_partition":1,"ts":1200,"l":2,"m":6}\n'
        b'{"_input":"S","_partition":1,"ts":1300,"l":2,"m":7}\n'
    )
    output = tmp_path / "out.jsonl"
    assert main(["run", "--plan", str(plan), "--input", str(source), "--output", str(output)]) == 0
    results = [orjson.loads(line) for line in output.read_bytes().splitlines()]
    assert sorted((r["S.m"], r["T.m"]) for r in results) == [(7, 6), (10, 5)]


def test_run_over_generated_nexmark_events(tmp_path: Path) -> None:
    output = tmp_path / "q7.jsonl"
    assert (
        main(["run", "--plan", "nexmark-q7", "--generate", "300000", "--output", str(output)]) == 0
    )
    results = [orjson.loads(line) for line in output.read_bytes().splitlines()]
    ids = [r["window_start"] for r in results]
    assert results and len(set(ids)) == 3
    for window in set(ids):
        prices = [r["price"] for r in results if r["window_start"] == window]
        assert len(set(prices)) == 1
