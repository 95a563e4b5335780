"""The demo's driver (run by dev/demo.sh with the stack up, the CRDs installed and the operator
running): a namespace with the Secrets, a Nexmark q5 StreamQuery, input fed into Kafka at a
steady rate by the engine's generator, a Migration with the chosen protocol and `verify: true`,
a progress display, then the phase timeline, the cost and the verification result.

Exit status 0 only when the migration Succeeded and its verification was exact (condition
Verified=True, `verification.exact`); otherwise it prints what failed, from the status message or
the verification's (a verification that is not exact is a failure, though the migration itself
Succeeded).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Producer
from kubernetes import client, config
from streamshift_engine.events.wire import encode_json
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate

GROUP, VERSION = "streamshift.io", "v1alpha1"
PARTITIONS, RATE = 4, 2000  # events per second, wall clock and event time alike
TOKEN = "demo-control-token"
# steady output before the migration, at least as long as a unimico move takes: the cost sets
# the gap during the migration against the longest pause over an equal stretch before it
SETTLE_S = 15.0


def feed(bootstrap: str, topic: str, stop: threading.Event) -> None:
    """Nexmark bids into `topic`, RATE per second, until `stop` is set."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True}
    )
    cfg = GeneratorConfig(partitions=PARTITIONS, events_per_second=RATE)
    index, began = 0, time.monotonic()
    while not stop.is_set():
        bids = generate(11, index, RATE // 10, cfg)["bid"]
        for partition in range(PARTITIONS):
            for value in encode_json(bids.take(bids.partition == partition)):
                producer.produce(topic, value, partition=partition)
        producer.poll(0)
        index += RATE // 10
        time.sleep(max(0.0, began + index / RATE - time.monotonic()))
    producer.flush(30)


def query_of(ns: str, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "StreamQuery",
        "metadata": {"name": "q5"},
        "spec": {
            "plan": {"builtin": "nexmark-q5"},
            "kafka": {"bootstrapServers": args.kafka},
            "sources": [{"name": "bid", "topic": f"{ns}-bid", "partitions": PARTITIONS}],
            "sinks": [{"name": "out", "topic": f"{ns}-q5-out", "partitions": PARTITIONS}],
            "snapshot": {
                "endpoint": args.s3_endpoint,
                "bucket": "streamshift-demo",
                "intervalSeconds": 5,
                "credentials": {
                    "accessKey": {"name": "s3", "key": "access"},
                    "secretKey": {"name": "s3", "key": "secret"},
                },
                "retention": {"onDelete": "Delete"},
            },
            "controlToken": {"name": "control", "key": "token"},
        },
    }


def migration_of(protocol: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Migration",
        "metadata": {"name": f"q5-{protocol}"},
        "spec": {
            "queryRef": {"name": "q5"},
            "protocol": protocol,
            "target": {"moveInstances": [0]},
            "verify": True,
        },
    }


def wait(what: str, check: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    sys.exit(f"demo: timed out after {timeout:.0f} s waiting for {what}")


@dataclass
class Running:
    """The demo's namespace with q5 running and input fed: how to read and create objects."""

    custom: Any
    namespace: str
    stop: threading.Event
    feeder: threading.Thread

    def status(self, plural: str, name: str) -> dict[str, Any]:
        body = self.custom.get_namespaced_custom_object(
            GROUP, VERSION, self.namespace, plural, name
        )
        return dict(body.get("status") or {})

    def create(self, plural: str, body: dict[str, Any]) -> None:
        self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, body)

    def finish(self) -> None:
        self.stop.set()
        self.feeder.join(60)


def arguments(doc: str | None, *names: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc)
    common = ("--namespace", "--kafka", "--s3-endpoint", "--s3-access-key", "--s3-secret-key")
    for name in (*names, *common, "--kubeconfig"):
        parser.add_argument(name, required=True)
    return parser.parse_args()


def start(args: argparse.Namespace) -> Running:
    """The namespace with its Secrets, q5 Running, input fed until q5 emits."""
    api: Any = config.new_client_from_config(config_file=args.kubeconfig)
    core: Any = client.CoreV1Api(api)
    ns = args.namespace
    core.create_namespace({"metadata": {"name": ns}})
    core.create_namespaced_secret(
        ns, {"metadata": {"name": "control"}, "stringData": {"token": TOKEN}}
    )
    s3 = {"access": args.s3_access_key, "secret": args.s3_secret_key}
    core.create_namespaced_secret(ns, {"metadata": {"name": "s3"}, "stringData": s3})
    stop = threading.Event()
    feeder = threading.Thread(target=feed, args=(args.kafka, f"{ns}-bid", stop), daemon=True)
    running = Running(client.CustomObjectsApi(api), ns, stop, feeder)
    began = time.monotonic()
    running.create("streamqueries", query_of(ns, args))
    wait(
        "StreamQuery q5 Running",
        lambda: running.status("streamqueries", "q5").get("phase") == "Running",
        90,
    )
    print(f"StreamQuery q5 Running and reporting after {time.monotonic() - began:.1f} s")
    feeder.start()
    wait(
        "q5 to emit (a watermark in status)",
        lambda: running.status("streamqueries", "q5").get("watermark"),
        60,
    )
    return running


def main() -> int:
    args = arguments(__doc__, "--protocol")
    running = start(args)
    print(f"q5 emitting; {SETTLE_S:.0f} s of steady output before the migration")
    time.sleep(SETTLE_S)
    migration = migration_of(args.protocol)
    name = migration["metadata"]["name"]
    running.create("migrations", migration)
    print(f"Migration {name} applied (protocol {args.protocol}); following it:")
    status = follow(lambda: running.status("migrations", name))
    running.finish()
    report(status)
    problem = failure(status)
    if problem is not None:
        print(f"\ndemo: FAILED: {problem}")
        return 1
    return 0


def failure(status: dict[str, Any]) -> str | None:
    """Why the demo failed, or None: Succeeded with an exact verification."""
    if status.get("phase") != "Succeeded":
        return f"the migration ended {status.get('phase')}: {status.get('message') or ''}"
    check = status.get("verification")
    if not check:
        return "the migration Succeeded but no verification was recorded"
    verified = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "Verified"), None
    )
    if not check.get("exact") or verified is None or verified.get("status") != "True":
        return f"the output is not exact: {check.get('message') or check}"
    return None


def follow(read: Any) -> dict[str, Any]:
    seen, status = "", {}
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        status = read()
        phase = status.get("phase", "Queued")
        line = f"  {time.strftime('%H:%M:%S')}  {phase:<22} {status.get('message') or ''}"
        if line[10:] != seen:
            print(line, flush=True)
            seen = line[10:]
        if phase in ("Succeeded", "Failed", "RolledBack"):
            return dict(status)
        time.sleep(0.25)
    return dict(status)


def report(status: dict[str, Any]) -> None:
    print(
        f"\nResult: {status.get('phase')}  protocol={status.get('protocol')} "
        f"({status.get('protocolReason') or status.get('message')})"
    )
    print("Phase timeline:")
    for record in status.get("phaseHistory", []):
        print(f"  {record['enteredAt']}  {record['phase']:<22} {record.get('message') or ''}")
    print("Cost:", status.get("cost") or "none recorded")
    print("Verification:", status.get("verification") or "not run")
    for condition in status.get("conditions") or []:
        print(
            f"Condition {condition['type']}={condition['status']} ({condition['reason']}): "
            f"{condition.get('message') or ''}"
        )


if __name__ == "__main__":
    sys.exit(main())
