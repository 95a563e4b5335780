"""Moving state between worker processes, driven through the control API as the operator drives
it: the origin pauses all four partitions at markers and drains; the target (started on hold)
`begin`s by pulling the states straight from the origin's control API (the origin releases
them), matches them by state id, then `recompute`s (nothing to recompute for the same plan) and
resumes from the positions the state covers. Input keeps arriving throughout; the output read
with `read_committed` equals the in-process reference exactly."""

from __future__ import annotations

import time

import pytest

from .flowing_q5 import EVERY_PARTITION, start_flowing_q5
from .harness import Services, WorkerProcesses, control

pytestmark = [pytest.mark.stack, pytest.mark.timeout(120)]


def test_moving_state_with_input_flowing_is_exact(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    flow = start_flowing_q5(services, run_id, workers)
    origin, target = flow.origin, flow.target
    everything = EVERY_PARTITION
    address = f"127.0.0.1:{origin['STREAMSHIFT_CONTROL_PORT']}"
    begin = {
        "role": "target",
        "protocol": "moving-state",
        "origins": [{"address": address, **everything}],
        **everything,
    }
    assert control(origin, "POST", "/v1/migrations/s1/export", everything)[0] == 409  # not paused
    paused_at = time.monotonic()
    while not control(origin, "POST", "/v1/migrations/s1/pause", everything)[1]["paused"]:
        assert time.monotonic() < paused_at + 30, "origin never reached its markers"
        time.sleep(0.05)
    status, begun = control(target, "POST", "/v1/migrations/s1/begin", begin)
    assert status == 200 and begun["state_bytes"] > 0 and begun["unmatched"] == []
    assert begun["matched"] == ["counts/*", "hottest/*"] and begun["discarded"] == []
    assert control(target, "POST", "/v1/migrations/s1/begin", begin)[1] == begun
    assert control(origin, "GET", "/v1/status")[1]["partitions"] == []
    status, resumed = control(target, "POST", "/v1/migrations/s1/recompute", everything)
    pause = time.monotonic() - paused_at
    assert status == 200 and resumed["recomputed_tuples"] == 0
    assert control(target, "POST", "/v1/migrations/s1/recompute", everything)[1] == resumed
    print(f"moving-state q5: state bytes {begun['state_bytes']}, pause {pause:.3f} s")
    flow.assert_exact()
