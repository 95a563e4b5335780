"""`make demo-elastic`: Nexmark q8 with the autoscaler on, under a load that steps up and back
down, watched live; at the end a figure of the run and the whole output against the reference.

q8, not q5: q5's hot-item maximum is over all auctions, a global plan that runs on one
instance only, so the autoscaler never scales it. By default the load comes from this process
(`streamshift_dev.elastic_load`), paced by the rate-shape code the Spark generator's streaming
mode uses (`nexmark.rates`: event time at wall time); `--load spark` writes the same step with
the Spark generator in a local Spark, `--load spark-kube` as a Spark job on the local
Kubernetes stack, its executors pods (`streamshift_dev.elastic_spark`). A Spark session (a JVM
and a job a second) shares this machine's two cores with the CPU-limited workers whose capacity
the step is sized by. One worker's capacity is measured first (a short run at parallelism 1
with input waiting, from the producer), so the step fits the machine the demo runs on, and
the low load is checked at one worker as the benchmark does (`elastic_sweep.low_load`).

Exit status 0 when the whole output equals the reference and every rescale succeeded,
verified exact.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from streamshift_dev import elastic, elastic_spark, elastic_sweep
from streamshift_dev.elastic_plot import plot
from streamshift_dev.elastic_timeline import Sample

REPO = Path(__file__).resolve().parents[2]
LOAD_TEXT = {
    "producer": "this process's producer, paced as the Spark generator's streaming mode paces",
    "spark": "the Spark generator's streaming mode in a local Spark, a job a second",
    "spark-kube": "the Spark generator's streaming mode on the local Kubernetes stack, a job a "
    "second (driver here, executors as pods)",
}


class Live:
    """The run's state on one terminal line, rewritten at each sample."""

    def __init__(self) -> None:
        self.phase = ""

    def __call__(self, phase: str, s: Sample) -> None:
        if phase != self.phase and self.phase:
            print(flush=True)  # keep the last line of each phase
        self.phase = phase
        print("\r" + elastic.progress_line(phase, s).ljust(150), end="", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-limit", type=int, default=elastic.Settings.cpu_limit_m)
    parser.add_argument("--target", type=float, default=elastic.Settings.target)
    parser.add_argument("--low-s", type=int, default=30)
    parser.add_argument("--high-s", type=int, default=90)
    parser.add_argument("--load", choices=elastic_spark.LOADS, default="producer")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    settings = elastic.Settings(cpu_limit_m=args.cpu_limit, target=args.target)
    phases = elastic.Phases(low_s=args.low_s, high_s=args.high_s, after_s=200)
    print("demo-elastic: Nexmark q8 (q5 is a global plan: never scaled above one instance)")
    print(f"load: {LOAD_TEXT[args.load]} (event time at wall time)")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with elastic.session(REPO / "out" / f"demo-elastic-{stamp}") as s:
        measured = elastic.capacity(s, settings, 10.0, print)
        rates = elastic.StepRates.of(measured, settings.target)
        rates = replace(rates, low=elastic_sweep.low_load(s, settings, rates.low, 10.0, print))
        print(
            f"step: {rates.low:,.0f} -> {rates.high:,.0f} records/s at {phases.low_s}s, back at "
            f"{phases.low_s + phases.high_s}s; {rates.workers_at_target} workers hold it at "
            f"{settings.target:.0%} target utilization"
        )
        outcome = elastic.run(s, settings, phases, rates.low, rates.high, Live(), args.load)
    print()
    for r in outcome.rescales:
        gap = "n/a" if r.gap_s is None else f"{r.gap_s:.1f}s (rhythm before {r.gap_before_s}s)"
        print(
            f"rescale {r.from_parallelism} -> {r.to_parallelism} at {r.started:.0f}s by "
            f"{r.protocol}: {r.phase}, output gap {gap}, verified exact: {r.exact}"
        )
    path = plot(
        outcome.samples,
        outcome.rescales,
        (outcome.step_up, outcome.step_down),
        f"q8 with the autoscaler, workers limited to {settings.cpu_limit_m}m",
        REPO / "out" / f"demo-elastic-{stamp}.png",
    )
    print(f"figure: {path}")
    verdict = "EQUAL to" if outcome.exact else "DIFFERENT from"
    print(
        f"verification: the whole output ({outcome.got} results of {outcome.fed_events:,} "
        f"events) is {verdict} the reference ({outcome.expected} results; {outcome.missing} "
        f"missing: backlog not processed, {outcome.extra} not in the reference)"
    )
    rescaled = bool(outcome.rescales) and all(
        r.phase == "Succeeded" and r.exact is True for r in outcome.rescales
    )
    return 0 if outcome.exact and rescaled else 1


if __name__ == "__main__":
    sys.exit(main())
