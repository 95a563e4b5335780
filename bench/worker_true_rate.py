"""One worker's records per busy second (DS2's true processing rate) at light loads and flat out,
on the local stack: the autoscaler sizes a step from the rate it measures at whatever load runs,
so the rate should not depend on the load.

A q8 worker (`streamshift_dev.workers`) in a cgroup CPU quota of its own (`--cpu-limit`
millicores, as the node agent runs a pod; 0 for none) reads persons and auctions produced by this
process (`elastic_load.Producing`): for each `--light` rate, then flat out (`--backlog-s` seconds
of it before the worker starts, so input waits throughout), the growth of its `/v1/status`
`load` totals (`busy_seconds`, `processed`) over `--measure-s` seconds after `--warm-s` seconds
at that load, the CPU its busiest threads used meanwhile (`/proc`: the loop's, the Kafka
clients', the commits'), how long its threads waited for a CPU (`schedstat`) and how long the
quota throttled its group (`cpu.stat`). Each phase has topics and a worker of its own (event
time starts at 0 for each, as q8's windows need).

`--step-s`: one more phase, a step from the first light rate to flat out, read every second
for that many seconds: the records per busy second since the step, what the autoscaler sizes a
step up with after measuring it for `MEASURE_OVERLOAD_S` (10 s), against the flat-out rate.

`python -m bench.worker_true_rate --cpu-limit 100 --light 5000 10000`; the last line
`true-rate light=R,... flat=R spread=S` (spread: the light rate farthest from the flat one, its
distance as a fraction of the flat one), after it with `--step-s` `step-rate 6s=R 12s=R ...
flat=R`.
"""

from __future__ import annotations

import argparse
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from streamshift_dev import workers
from streamshift_dev.cgroups import CpuLimit
from streamshift_dev.elastic_load import Producing, config, events_for

from bench.runtime import cpu_of

PARTITIONS = 4
TOKEN = "bench-token"


def totals(env: dict[str, str]) -> dict[str, Any]:
    status, body = workers.control(env, "GET", "/v1/status")
    if status != 200:
        raise RuntimeError(f"/v1/status answered {status}: {body}")
    load: dict[str, Any] = body["load"]
    return {"at": time.monotonic(), **load}


def thread_cpu(pid: int) -> dict[int, tuple[str, float, float]]:
    """Each thread of process `pid`: its name, the CPU seconds (user and system) it used so far,
    and the seconds it waited runnable for a CPU (`schedstat`'s run delay: the machine's other
    load, not the quota, which throttles the group instead)."""
    used = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat, schedstat = (task / "stat").read_text(), (task / "schedstat").read_text()
        except OSError:  # the thread ended
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        used[int(task.name)] = (name, sum(cpu_of(stat)), int(schedstat.split()[1]) / 1e9)
    return used


def per_busy_second(first: dict[str, Any], last: dict[str, Any]) -> float:
    """Records processed per busy second between two `totals`."""
    busy = last["busy_seconds"] - first["busy_seconds"]
    return (last["processed"] - first["processed"]) / busy if busy > 0 else float("nan")


def phase(
    env: dict[str, str], pid: int, limit: CpuLimit | None, warm_s: float, measure_s: float
) -> dict[str, Any]:
    """Records per second and per busy second, the busy fraction, the CPU milliseconds per
    second of the worker's busiest threads, the milliseconds per second its threads waited for a
    CPU (all of them, and the busiest one's) and the quota throttled the group, over `measure_s`
    seconds after `warm_s` at the load running."""
    throttled = limit.throttled_seconds if limit is not None else lambda: 0.0
    time.sleep(warm_s)
    first, cpu_before, throttled_before = totals(env), thread_cpu(pid), throttled()
    time.sleep(measure_s)
    last, cpu_after, throttled_after = totals(env), thread_cpu(pid), throttled()
    span = last["at"] - first["at"]
    threads = []  # (CPU ms/s, wait ms/s, name), the busiest last
    for tid, (name, used, waited) in cpu_after.items():
        _, used_before, waited_before = cpu_before.get(tid, (name, 0.0, 0.0))
        threads.append(
            ((used - used_before) * 1000 / span, (waited - waited_before) * 1000 / span, name)
        )
    threads.sort()
    return {
        "wait_ms": sum(wait for _, wait, _ in threads),
        "busiest_wait_ms": threads[-1][1],
        "throttled_ms": (throttled_after - throttled_before) * 1000 / span,
        "processed": (last["processed"] - first["processed"]) / span,
        "busy": (last["busy_seconds"] - first["busy_seconds"]) / span,
        "true_rate": per_busy_second(first, last),
        "lag": float(sum(last["lag_records"].values())),
        "cpu_ms": sum(ms for ms, _, _ in threads),
        "threads": [f"{name} {ms:.1f}" for ms, _, name in reversed(threads[-4:])],
    }


def after_step(
    env: dict[str, str], producing: Producing, warm_s: float, step_s: float
) -> list[tuple[float, float]]:
    """After `warm_s` at the light load, the input stepped to flat out: each second, the seconds
    since the step and the records per busy second since it."""
    time.sleep(warm_s)
    first = totals(env)
    producing.flat_out = True
    since: list[tuple[float, float]] = []
    while time.monotonic() - first["at"] < step_s:
        time.sleep(1.0)
        last = totals(env)
        since.append((last["at"] - first["at"], per_busy_second(first, last)))
        print(f"  {since[-1][0]:5.1f}s after the step: {since[-1][1]:,.0f} per busy second")
    return since


def measured(
    stack: workers.Services, args: argparse.Namespace, rate: int | None, step: bool = False
) -> dict[str, Any]:
    """One phase: `rate` records per second, or flat out (None); `step`: from `rate` to flat
    out (`after_step`)."""
    run_id = f"tr-{uuid.uuid4().hex[:8]}"
    names = [f"{run_id}-{n}" for n in ("person", "auction", "out", "out.dead")]
    workers.create_topics(stack, names, PARTITIONS)
    env = workers.worker_env(
        stack,
        run_id,
        "nexmark-q8",
        ["person", "auction"],
        PARTITIONS,
        TOKEN,
        "bench-true-rate",
        STREAMSHIFT_NAMESPACE="bench",
        STREAMSHIFT_EPOCH="0",
    )
    limit = CpuLimit(f"bench-{run_id}", args.cpu_limit) if args.cpu_limit else None
    process: subprocess.Popen[bytes] | None = None
    generator = config(PARTITIONS, events_for(rate or 1000))
    producing = Producing(stack.kafka, run_id, generator, flat_out=rate is None)
    log = args.log_dir / f"worker-{rate or 'flat'}{'-step' if step else ''}.log"
    try:
        producing.start()
        if rate is None:
            time.sleep(args.backlog_s)  # input waits from the start
        if limit is not None:
            limit.create()
        process = workers.start(env, log, limit.enter if limit is not None else None)
        workers.wait_ready(env, process, timeout=90, log=log)
        if step:
            return {"since": after_step(env, producing, args.warm_s, args.step_s)}
        result = phase(env, process.pid, limit, args.warm_s, args.measure_s)
        return {"input": producing.records / (time.monotonic() - producing.started), **result}
    finally:
        producing.stop()
        if process is not None:
            process.kill()
            process.wait()
        if limit is not None:
            limit.remove()
        workers.delete_topics(stack, names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-limit", type=int, default=100, help="millicores; 0: none")
    parser.add_argument("--light", type=int, nargs="+", default=[5000], help="records/s")
    parser.add_argument("--warm-s", type=float, default=10.0)
    parser.add_argument("--measure-s", type=float, default=30.0)
    parser.add_argument("--backlog-s", type=float, default=20.0, help="flat out, before the worker")
    parser.add_argument("--step-s", type=float, default=0.0, help="a step phase this long")
    parser.add_argument("--log-dir", type=Path, default=Path("out/worker-true-rate"))
    args = parser.parse_args()
    args.log_dir.mkdir(parents=True, exist_ok=True)
    stack = workers.services()
    results = {f"light {rate}": measured(stack, args, rate) for rate in args.light}
    results["flat"] = measured(stack, args, None)
    since = measured(stack, args, args.light[0], step=True)["since"] if args.step_s else []
    for name, r in results.items():
        print(
            f"{name:>12}: input {r['input']:.0f}/s processed {r['processed']:.0f}/s "
            f"busy {r['busy']:.2f} lag {r['lag']:.0f} -> {r['true_rate']:.0f} per busy second"
        )
        threads = ", ".join(r["threads"])
        print(f"{'':>12}  CPU {r['cpu_ms']:.1f} ms/s, busiest threads (ms/s): {threads}")
        print(
            f"{'':>12}  waited for a CPU {r['wait_ms']:.1f} ms/s (the busiest thread "
            f"{r['busiest_wait_ms']:.1f}), throttled by the quota {r['throttled_ms']:.1f} ms/s"
        )
    flat_rate = results.pop("flat")["true_rate"]
    lights = [r["true_rate"] for r in results.values()]
    spread = max(abs(rate - flat_rate) for rate in lights) / flat_rate
    light = ",".join(f"{rate:.0f}" for rate in lights)
    print(f"true-rate light={light} flat={flat_rate:.0f} spread={spread:.2f}")
    if since:
        marks = [m for m in (3, 6, 12, 24, 48) if m <= since[-1][0]]
        at = [next(r for t, r in since if t >= m) for m in marks]
        rates = " ".join(f"{m}s={r:.0f}" for m, r in zip(marks, at, strict=True))
        print(f"step-rate {rates} flat={flat_rate:.0f}")


if __name__ == "__main__":
    main()
