"""`streamshift generate` and `streamshift verify`: the Spark jobs as console subcommands.

`register(subparsers)` adds both to the `streamshift` parser (see `streamshift_engine.cli`);
`main(argv)` runs them standalone (`python -m streamshift_engine.spark.cli generate ...`), which
is also the application the Spark-on-Kubernetes driver runs. Each handler returns the exit
code: `verify` is non-zero on any missing, duplicate, wrong or extra result.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from streamshift_engine.nexmark import rates
from streamshift_engine.nexmark.config import GeneratorConfig


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="first generator index")
    parser.add_argument("--events", type=int, default=1_000_000, help="generator indices")
    parser.add_argument("--partitions", type=int, default=GeneratorConfig().partitions)
    parser.add_argument(
        "--event-rate",
        type=int,
        default=GeneratorConfig().events_per_second,
        help="events per second of event time (the rate of the shape's first part)",
    )
    parser.add_argument("--rate-shape", choices=rates.SHAPES, default="constant")
    parser.add_argument("--high", type=int, default=0, help="rate after the step / sine peak")
    parser.add_argument("--step-at", type=int, default=30, help="seconds until the step")
    parser.add_argument("--step-until", type=int, default=0, help="seconds until the step back")
    parser.add_argument("--period", type=int, default=60, help="sine period in seconds")
    parser.add_argument("--bootstrap", help="Kafka bootstrap (default: $KAFKA_BOOTSTRAP, stack)")
    parser.add_argument("--master", default="local[2]", help="Spark master")


def _config(args: argparse.Namespace) -> GeneratorConfig:
    return GeneratorConfig(
        partitions=args.partitions,
        events_per_second=args.event_rate,
        rate_shape=args.rate_shape,
        next_events_per_second=args.high,
        step_at_s=args.step_at,
        step_until_s=args.step_until,
        period_s=args.period,
    )


def register(subparsers: Any) -> None:
    gen = subparsers.add_parser("generate", help="Nexmark events into Kafka through Spark")
    _common(gen)
    gen.add_argument("--wire", choices=("json", "columnar"), default="json")
    gen.add_argument("--topic-prefix", default="nexmark-")
    gen.add_argument("--tasks", type=int, default=1, help="Spark tasks writing (see GenerateSpec)")
    gen.add_argument(
        "--duration",
        type=float,
        default=0.0,
        help="stream for this many seconds, events arriving at their event time (0: write "
        "--events at once)",
    )
    gen.set_defaults(handler=generate_command)
    ver = subparsers.add_parser("verify", help="compare an output topic with the Spark oracle")
    _common(ver)
    ver.add_argument("--query", required=True, help="nexmark-q0..q8, smq, or the seeds q1..q3")
    ver.add_argument("--topic", required=True, help="the query's output topic")
    ver.add_argument("--timeout", type=float, default=60.0)
    ver.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="KIND=TOPIC",
        help="read this input back from a JSON topic (person, auction, bid, S, T), earliest to "
        "latest committed offsets, instead of generating it; repeat per input",
    )
    ver.set_defaults(handler=verify_command)


def generate_command(args: argparse.Namespace) -> int:
    from streamshift_engine.spark.generator import GenerateSpec, generate_to_kafka
    from streamshift_engine.spark.kafka import bootstrap_servers, ensure_topics
    from streamshift_engine.spark.pacing import paced
    from streamshift_engine.spark.session import spark_session

    bootstrap = bootstrap_servers(args.bootstrap)
    topics = {k: f"{args.topic_prefix}{k}" for k in ("person", "auction", "bid")}
    ensure_topics(bootstrap, topics.values(), args.partitions)
    spark = spark_session(args.master)
    spec = GenerateSpec(
        args.seed, args.start, args.events, args.wire, _config(args), topics, args.tasks
    )
    began = time.perf_counter()
    if not args.duration:
        written = generate_to_kafka(spark, spec, bootstrap)
    else:
        log = paced(spec, args.duration, lambda s: generate_to_kafka(spark, s, bootstrap))
        written = sum(n for _, n in log)
    elapsed = time.perf_counter() - began
    print(f"generated {written} events ({args.wire}) in {elapsed:.1f} s: {written / elapsed:.0f}/s")
    print(f"next index {args.start + written}")
    return 0


def verify_command(args: argparse.Namespace) -> int:
    from streamshift_engine.spark.kafka import bootstrap_servers
    from streamshift_engine.spark.oracle import generator_source, kafka_source, verify
    from streamshift_engine.spark.session import spark_session

    bootstrap = bootstrap_servers(args.bootstrap)
    inputs = dict(_input_topic(text) for text in args.input)
    spark = spark_session(args.master)
    if inputs:
        source = kafka_source(spark, bootstrap, inputs)
    else:
        source = generator_source(spark, args.seed, args.start, args.events, _config(args))
    report = verify(args.query, source, bootstrap, args.topic, args.timeout)
    print("\n".join(report.lines()))
    return 0 if report.ok else 1


def _input_topic(text: str) -> tuple[str, str]:
    kind, sep, topic = text.partition("=")
    if not sep or not kind or not topic:
        raise SystemExit(
            f"streamshift verify: --input wants KIND=TOPIC (e.g. bid=nexmark-bid), got {text!r}"
        )
    return kind, topic


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="streamshift-spark", description=__doc__)
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
