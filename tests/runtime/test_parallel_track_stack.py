"""Parallel track between worker processes, driven through the control API as the operator
drives it: the origin splits old from new tuples at its watermark and reports where the target
must read from; the target runs the plan from there with empty state and holds its output;
the origin emits only results with an old tuple and hands the partitions over once it holds
none; the target's held output is then released, first what is due by a watermark
(`release-until`), then the rest. Input keeps arriving throughout; the output read with
`read_committed` equals the in-process reference exactly."""

from __future__ import annotations

import pytest

from .flowing_q5 import EVERY_PARTITION, start_flowing_q5
from .harness import Services, WorkerProcesses, control, wait_status

pytestmark = [pytest.mark.stack, pytest.mark.timeout(120)]


def test_parallel_track_with_input_flowing_is_exact(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    flow = start_flowing_q5(services, run_id, workers)
    origin, target = flow.origin, flow.target
    everything = {"protocol": "parallel-track", **EVERY_PARTITION}
    status, split = control(origin, "POST", "/v1/migrations/p1/split", everything)
    assert status == 200 and split["role"] == "origin" and len(split["offsets"]) == 4
    assert control(origin, "POST", "/v1/migrations/p1/split", everything)[1] == split
    body = {
        "role": "target",
        "protocol": "parallel-track",
        "split": split["split"],
        "offsets": split["offsets"],
        "rows_counted": split["rows_counted"],
        **everything,
    }
    status, begun = control(target, "POST", "/v1/migrations/p1/begin", body)
    assert status == 200 and begun["role"] == "target"
    flow.producer.join(60)
    done = wait_status(origin, lambda s: s["roles"]["p1"]["done"])["roles"]["p1"]
    assert control(origin, "GET", "/v1/status")[1]["partitions"] == []
    held = wait_status(
        target, lambda s: s["roles"]["p1"]["held"] > 0 and s["watermark"] is not None
    )
    assert held["counts"]["results_out"] == 0
    due = {"protocol": "parallel-track", "until": held["watermark"]}
    status, early = control(target, "POST", "/v1/migrations/p1/release-until", due)
    assert status == 200 and early["role"] == "target"
    assert control(target, "GET", "/v1/status")[1]["counts"]["results_out"] > 0
    released = {"handed_over_at": done["handed_over_at"]}
    assert control(target, "POST", "/v1/migrations/p1/release-output", released)[0] == 200
    flow.assert_exact()


def test_a_target_following_its_origin_releases_by_itself(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    """Begun with the origin's address, the target releases its held results by itself (up to
    the origin's committed watermark, then the rest once the origin is done): no release call
    from outside, and the output is exact."""
    flow = start_flowing_q5(services, run_id, workers)
    origin, target = flow.origin, flow.target
    track = {"protocol": "parallel-track", **EVERY_PARTITION}
    split = control(origin, "POST", "/v1/migrations/f1/split", track)[1]
    body = {
        "role": "target",
        "protocol": "parallel-track",
        "split": split["split"],
        "offsets": split["offsets"],
        "rows_counted": split["rows_counted"],
        "origin": f"127.0.0.1:{origin['STREAMSHIFT_CONTROL_PORT']}",
        **EVERY_PARTITION,
    }
    assert control(target, "POST", "/v1/migrations/f1/begin", body)[0] == 200
    flow.producer.join(60)
    done = wait_status(target, lambda s: s["roles"]["f1"]["done"])
    assert done["roles"]["f1"]["held"] == 0 and done["phase"] == "running"
    assert control(origin, "GET", "/v1/status")[1]["roles"]["f1"]["done"]
    flow.assert_exact()
