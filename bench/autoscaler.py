"""`make bench-autoscaler`: the autoscaler on Nexmark q8 under a step load, against the optimum
measured in the same run.

Worker pods are limited to a fraction of a core (`--cpu-limit`, millicores). First one worker's
capacity: a q8 query at parallelism 1 without the autoscaler, its input produced flat out far
above what it processes, its records processed per second once a backlog waits; it sizes the
load. Then the optimum, by a sweep (`streamshift_dev.elastic_sweep`): the high load against
fixed parallelisms, the smallest that keeps up. Then the autoscaled run
(`streamshift_dev.elastic`): q8 with the autoscaler on, the load low (half of one worker's
rate at the target, lowered until one worker reads about half busy there:
`elastic_sweep.low_load`), stepped up to about three workers' (`--high-workers` of it)
and back, event time at wall time, written by `--load` (`producer`, `spark`, `spark-kube`:
`streamshift_dev.elastic_spark`); one line per 5 s and per Migration phase, the rescales with
their protocol, output gap and verification, the whole output against the reference, a PNG
(out/bench-autoscaler.png). q8, not q5: q5 is a global plan, never scaled above 1.

Final line: `autoscaler recover-s=N rescales-up=N rescales-down=N chosen=N optimum=N
gap-ratio-max=R exact=true` (see `streamshift_dev.elastic_timeline` for each figure).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from streamshift_dev import elastic, elastic_spark, elastic_sweep, elastic_timeline
from streamshift_dev.elastic_plot import plot
from streamshift_dev.elastic_timeline import Sample

REPO = Path(__file__).resolve().parent.parent


def say(line: str) -> None:
    print(line, flush=True)


class Progress:
    """A line every `every_s` seconds, and whenever the phase, parallelism or Migration
    changes."""

    def __init__(self, every_s: float = 5.0) -> None:
        self.every_s = every_s
        self.last = -every_s
        self.shown: tuple[str, int, str] = ("", 0, "")

    def __call__(self, phase: str, s: Sample) -> None:
        now = (phase, s.parallelism, s.migration)
        if now == self.shown and s.t - self.last < self.every_s:
            return
        self.shown, self.last = now, s.t
        say(elastic.progress_line(phase, s))


def load_average() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-limit", type=int, default=elastic.Settings.cpu_limit_m)
    parser.add_argument("--target", type=float, default=elastic.Settings.target)
    parser.add_argument("--high-workers", type=float, default=2.6)
    parser.add_argument(
        "--protocol", default=elastic.Settings.protocol, help="the autoscaler's Migrations'"
    )
    parser.add_argument(
        "--load",
        choices=elastic_spark.LOADS,
        default="producer",
        help="what writes the step: this process's producer, the Spark generator in a local "
        "Spark, or on the local Kubernetes stack (driver here, executors as pods)",
    )
    parser.add_argument("--measure-s", type=float, default=20.0)
    parser.add_argument(
        "--sweep-s", type=float, default=30.0, help="seconds each parallelism swept is measured"
    )
    parser.add_argument("--low-s", type=int, default=elastic.Phases.low_s)
    parser.add_argument("--high-s", type=int, default=elastic.Phases.high_s)
    parser.add_argument("--after-s", type=int, default=elastic.Phases.after_s)
    parser.add_argument(
        "--quick", action="store_true", help="shorter phases (about 10 min with the sweep)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.quick:
        args.measure_s, args.sweep_s = 10.0, 20.0
        args.low_s, args.high_s, args.after_s = 30, 100, 200
    settings = elastic.Settings(
        cpu_limit_m=args.cpu_limit, target=args.target, protocol=args.protocol
    )
    phases = elastic.Phases(low_s=args.low_s, high_s=args.high_s, after_s=args.after_s)
    say(
        f"bench-autoscaler: q8 (q5 is a global plan, never scaled above 1), protocol "
        f"{settings.protocol}, load {args.load}; {load_average()}"
    )
    began = time.monotonic()
    with elastic.session(REPO / "out" / "bench-autoscaler") as s:
        say(f"capacity: one worker at {settings.cpu_limit_m}m, input flat out")
        measured = elastic.capacity(s, settings, args.measure_s, say)
        rates = elastic.StepRates.of(measured, settings.target, args.high_workers)
        say(
            f"load: {rates.low:,.0f} -> {rates.high:,.0f} -> {rates.low:,.0f} records/s "
            f"(one worker at {settings.target:.0%} target: {rates.at_target:,.0f}/s; "
            f"{rates.workers_at_target} hold the high load at the target); {load_average()}"
        )
        if rates.high > 0.8 * measured.produced_per_s:
            say(
                f"warning: the high load is {rates.high / measured.produced_per_s:.0%} of what "
                "this process produced flat out: it may fall behind (a lower --cpu-limit helps)"
            )
        rates = replace(
            rates, low=elastic_sweep.low_load(s, settings, rates.low, args.sweep_s, say)
        )
        points = elastic_sweep.sweep(
            s, settings, rates.high, measured.records_per_s, args.sweep_s, say
        )
        best = elastic_sweep.optimum(points, settings.lag_tolerance_s)
        say(f"optimum at the high load: {best or 'none of those swept'}; {load_average()}")
        outcome = elastic.run(s, settings, phases, rates.low, rates.high, Progress(), args.load)
    figures = summary(outcome, settings, best or 0)
    path = plot(
        outcome.samples,
        outcome.rescales,
        (outcome.step_up, outcome.step_down),
        f"q8 autoscaled, workers limited to {settings.cpu_limit_m}m",
        REPO / "out" / "bench-autoscaler.png",
    )
    say(f"figure: {path}; took {time.monotonic() - began:.0f} s; {load_average()}")
    say(figures)
    return 0 if outcome.exact else 1


def summary(outcome: elastic.Outcome, settings: elastic.Settings, best: int) -> str:
    """Print the rescales, decisions and output check; return the final line."""
    for r in outcome.rescales:
        ratio = "n/a" if r.gap_ratio is None else f"{r.gap_ratio:.2f}"
        handed = "-" if r.handed_over is None else f"{r.handed_over:.0f}s"
        ended = "-" if r.ended is None else f"{r.ended:.0f}s"
        say(
            f"rescale {r.name}: {r.from_parallelism} -> {r.to_parallelism} at {r.started:.0f}s "
            f"by {r.protocol}, handed over at {handed}, {r.phase} at {ended}, output gap "
            f"{r.gap_s} s against rhythm {r.gap_before_s} s (ratio {ratio}), verified exact "
            f"{r.exact}"
        )
    for decision in outcome.decisions:
        say(f"decision: {decision}")
    say(
        f"output: {outcome.got} results against {outcome.expected} of the reference over "
        f"{outcome.fed_events:,} events: {'equal' if outcome.exact else 'DIFFERENT'} "
        f"({outcome.missing} missing: backlog not processed; {outcome.extra} not in the reference)"
    )
    samples = outcome.samples
    after = elastic_timeline.max_lag_after(samples, outcome.step_down)
    say(f"lag after the step down: at most {after:.1f} s")
    recover = elastic_timeline.recover_seconds(
        samples, outcome.step_up, outcome.rescales, settings.lag_tolerance_s, outcome.step_down
    )
    exact = outcome.exact and all(r.exact is True for r in outcome.rescales)
    return elastic_timeline.final_line(
        recover,
        outcome.rescales,
        elastic_timeline.chosen(samples, outcome.rescales, outcome.step_up, outcome.step_down),
        best,
        elastic_timeline.gap_ratio_max(outcome.rescales),
        exact,
    )


if __name__ == "__main__":
    sys.exit(main())
