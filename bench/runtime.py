"""`make bench-runtime`: one worker process on the local stack's Kafka against the in-process
engine on the same input, for Nexmark q5 and q8 with JSON and columnar records.

The input is generated, encoded and produced first (not timed). The in-process figure decodes
the same records and feeds an engine `Instance` per partition, polling after each batch. The
worker figure is its events per second between the first and the last consumed event seen on
its control API (from its readiness when the run is too short to see both). Prints one line per
case and a final line `runtime kafka-vs-inproc-json=R kafka-vs-inproc-columnar=R` (the lower
ratio over the queries).
Migration gap benchmarks are not measured here.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import (
    Schema,
    decode_columnar,
    decode_json,
    encode_columnar,
    encode_json,
)
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan import builtin
from streamshift_engine.runner import Instance

PARTITIONS = 4
CHUNK = 1000


def stack_env() -> dict[str, str]:
    cache = Path(os.environ.get("STREAMSHIFT_CACHE", Path.home() / ".cache" / "streamshift"))
    lines = (cache / "run" / "stack.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def records(batch: Batch, fmt: str) -> dict[int, list[bytes]]:
    """Per partition, the encoded Kafka records in offset order."""
    out = {}
    for p in range(PARTITIONS):
        part = batch.take(batch.partition == p)
        if fmt == "json":
            out[p] = encode_json(part)
        else:
            out[p] = [
                encode_columnar(part.take(slice(s, s + CHUNK))) for s in range(0, len(part), CHUNK)
            ]
    return out


def in_process(plan_name: str, encoded: dict[str, dict[int, list[bytes]]], fmt: str) -> float:
    plan = builtin(plan_name)
    instance = Instance(plan, range(PARTITIONS))
    total = 0
    begin = time.perf_counter()
    for spec in plan.inputs:
        schema = Schema(spec.name, tuple(spec.schema.items()), spec.time_field)  # type: ignore[arg-type]
        for p, values in encoded[spec.name].items():
            step = CHUNK if fmt == "json" else 1
            for s in range(0, len(values), step):
                chunk = values[s : s + step]
                if fmt == "json":
                    batch, _ = decode_json(
                        spec.name, chunk, [p] * len(chunk), range(s, s + len(chunk)), schema
                    )
                else:
                    batch = decode_columnar(chunk[0], schema.names)
                instance.feed(spec.name, p, batch)
                total += len(batch)
                instance.poll()
    return total / (time.perf_counter() - begin)


def status(port: int) -> dict[str, object]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/status")
    request.add_header("Authorization", "Bearer bench")
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(json.loads(response.read()))


def worker_rate(
    stack: dict[str, str],
    plan_name: str,
    encoded: dict[str, dict[int, list[bytes]]],
    fmt: str,
    total: int,
) -> float:
    run = f"bench-{uuid.uuid4().hex[:6]}"
    topics = {name: f"{run}-{name}" for name in encoded}
    admin = AdminClient({"bootstrap.servers": stack["KAFKA_BOOTSTRAP"]})
    for future in admin.create_topics(
        [NewTopic(t, PARTITIONS, 1) for t in [*topics.values(), f"{run}-out", f"{run}-out.dead"]]
    ).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": stack["KAFKA_BOOTSTRAP"], "linger.ms": 20})
    for name, parts in encoded.items():
        for p, values in parts.items():
            for value in values:
                while True:
                    try:
                        producer.produce(topics[name], value, partition=p)
                        break
                    except BufferError:
                        producer.poll(0.1)
    producer.flush(120)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "STREAMSHIFT_QUERY": run,
        "STREAMSHIFT_INSTANCE": "0",
        "STREAMSHIFT_PARTITIONS": "0,1,2,3",
        "STREAMSHIFT_PLAN": json.dumps({"builtin": plan_name}),
        "STREAMSHIFT_SOURCES": json.dumps(
            [{"name": n, "topic": t, "partitions": PARTITIONS} for n, t in topics.items()]
        ),
        "STREAMSHIFT_SINKS": json.dumps(
            [{"name": "out", "topic": f"{run}-out", "partitions": PARTITIONS}]
        ),
        "STREAMSHIFT_KAFKA_BOOTSTRAP": stack["KAFKA_BOOTSTRAP"],
        "STREAMSHIFT_S3_ENDPOINT": stack["S3_ENDPOINT"],
        "STREAMSHIFT_S3_BUCKET": "bench-runtime",
        "STREAMSHIFT_S3_PREFIX": f"{run}/",
        "STREAMSHIFT_S3_ACCESS_KEY": stack["S3_ACCESS_KEY"],
        "STREAMSHIFT_S3_SECRET_KEY": stack["S3_SECRET_KEY"],
        "STREAMSHIFT_CONTROL_TOKEN": "bench",
        "STREAMSHIFT_CONTROL_PORT": str(port),
        "POD_IP": "127.0.0.1",
        "STREAMSHIFT_INPUT_FORMAT": fmt,
        "STREAMSHIFT_SNAPSHOT_INTERVAL_S": "3600",
        "STREAMSHIFT_BATCH_SIZE": "20000",
    }
    log = Path(tempfile.gettempdir()) / f"{run}.log"
    with log.open("wb") as out:
        command = [sys.executable, "-m", "streamshift_engine.runtime"]
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        ready: float | None = None
        first: tuple[float, int] | None = None
        while time.monotonic() < deadline and process.poll() is None:
            now = time.monotonic()
            try:
                if ready is None:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5):
                        ready = now
                    continue
                count = int(status(port)["counts"]["events_in"])  # type: ignore[index]
            except OSError:
                continue
            if count and first is None:
                first = (now, count)
            if count >= total and first is not None:
                if now - first[0] >= 0.5:
                    return (count - first[1]) / (now - first[0])
                return count / (now - ready)
            time.sleep(0.02)
        tail = log.read_text()[-2000:]
        raise SystemExit(f"{plan_name} {fmt}: the worker did not consume all {total}:\n{tail}")
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(10)


def _share(config: GeneratorConfig, kind: str) -> float:
    """The fraction of generated events that are of `kind`."""
    parts = {
        "person": config.person_proportion,
        "auction": config.auction_proportion,
        "bid": config.bid_proportion,
    }
    return parts[kind] / config.total_proportion


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--events", type=int, default=1_500_000, help="events each query reads (about)"
    )
    parser.add_argument("--queries", nargs="+", default=["nexmark-q5", "nexmark-q8"])
    args = parser.parse_args()
    stack = stack_env()
    ratios: dict[str, list[float]] = {"json": [], "columnar": []}
    for plan_name in args.queries:
        plan = builtin(plan_name)
        config = GeneratorConfig(partitions=PARTITIONS)
        share = sum(_share(config, spec.name) for spec in plan.inputs)
        events = generate(1, 0, int(args.events / share), config)
        for fmt in ("json", "columnar"):
            encoded = {spec.name: records(events[spec.name], fmt) for spec in plan.inputs}
            total = sum(len(events[spec.name]) for spec in plan.inputs)
            inproc = in_process(plan_name, encoded, fmt)
            worker = worker_rate(stack, plan_name, encoded, fmt, total)
            ratios[fmt].append(worker / inproc)
            print(
                f"{plan_name} {fmt}: events={total} in-process={inproc:,.0f}/s "
                f"worker={worker:,.0f}/s ratio={worker / inproc:.2f}",
                flush=True,
            )
    print(
        f"runtime kafka-vs-inproc-json={min(ratios['json']):.2f} "
        f"kafka-vs-inproc-columnar={min(ratios['columnar']):.2f}"
    )


if __name__ == "__main__":
    main()
