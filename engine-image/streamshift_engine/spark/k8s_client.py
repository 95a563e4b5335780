"""Spark on the local Kubernetes stack in client mode: the driver here, executors as pods.

The process node agent (`dev/streamshift_dev`) runs a pod's container command as a local
process with the pod's environment, but no image entrypoint and no volumes. Spark's executor
pods rely on the image's `/opt/entrypoint.sh executor`, so an executor pod template gives the
container an explicit command, `deploy/spark/executor-entrypoint.sh`: the executor branch of
that entrypoint over the venv's pyspark. The executors connect back to the driver on loopback
(every pod has its own 127.0.x.y address) and fetch the connector jars from the driver. A Spark
driver *pod* (cluster mode) still cannot run there: it needs the `spark.properties` ConfigMap
volume that spark-submit mounts into it.

`python -m streamshift_engine.spark.k8s_client --events N` (`make spark-kube-run`) generates
N Nexmark events into fresh Kafka topics with two executor pods in a fresh namespace, prints
the executor pods it saw and the records in Kafka, and removes the namespace and the topics.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from streamshift_engine.spark.k8s import IMAGE

ENTRYPOINT = Path(__file__).resolve().parents[3] / "deploy" / "spark" / "executor-entrypoint.sh"


def executor_template(entrypoint: Path = ENTRYPOINT) -> dict[str, Any]:
    """The executor pod template: Spark keeps the container's command and adds `executor`."""
    container = {"name": "spark-executor", "command": [str(entrypoint)]}
    return {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [container]}}


def client_config(
    kubeconfig: Path, namespace: str, template_file: Path, executors: int = 2
) -> dict[str, str]:
    """Spark settings of a client-mode session whose executors are pods of `namespace`, with
    the credentials of `kubeconfig`'s current context (file paths, as the stack writes them)."""
    config = yaml.safe_load(kubeconfig.read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    cluster = next(c for c in config["clusters"] if c["name"] == context["context"]["cluster"])
    user = next(u for u in config["users"] if u["name"] == context["context"]["user"])
    auth = "spark.kubernetes.authenticate"
    return {
        "spark.submit.deployMode": "client",
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.container.image": IMAGE,
        "spark.kubernetes.executor.podTemplateFile": str(template_file),
        f"{auth}.caCertFile": cluster["cluster"]["certificate-authority"],
        f"{auth}.clientCertFile": user["user"]["client-certificate"],
        f"{auth}.clientKeyFile": user["user"]["client-key"],
        "spark.executor.instances": str(executors),
        "spark.executor.cores": "1",
        "spark.executor.memory": "1g",
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
    }


def api_server(kubeconfig: Path) -> str:
    """The current context's API server URL."""
    config = yaml.safe_load(kubeconfig.read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    cluster = next(c for c in config["clusters"] if c["name"] == context["context"]["cluster"])
    return str(cluster["cluster"]["server"])


def executor_pods(core: Any, namespace: str) -> list[tuple[str, str, str]]:
    """(name, phase, pod IP) of the namespace's Spark executor pods."""
    pods = core.list_namespaced_pod(namespace, label_selector="spark-role=executor").items
    return [(p.metadata.name, p.status.phase, p.status.pod_ip or "") for p in pods]


def records_in(bootstrap: str, topics: Sequence[str]) -> int:
    """The records in `topics` (sum of end offsets; the topics were empty before)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"count-{uuid.uuid4()}"})
    try:
        metadata = consumer.list_topics(timeout=10)
        total = 0
        for topic in topics:
            for partition in metadata.topics[topic].partitions:
                _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)
                total += high
        return total
    finally:
        consumer.close()


def run(events: int, executors: int) -> int:
    """Generate `events` events with executor pods; 0 when Kafka then holds all of them."""
    from kubernetes import client, config

    from streamshift_engine.spark.generator import GenerateSpec, generate_to_kafka
    from streamshift_engine.spark.kafka import (
        bootstrap_servers,
        delete_topics,
        ensure_topics,
        stack_env,
    )
    from streamshift_engine.spark.session import spark_session

    kubeconfig = Path(stack_env()["KUBECONFIG"])
    namespace = f"spark-{uuid.uuid4().hex[:8]}"
    core: Any = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))  # type: ignore[no-untyped-call]
    core.create_namespace({"metadata": {"name": namespace}})
    bootstrap = bootstrap_servers()
    topics = {k: f"{namespace}-{k}" for k in ("person", "auction", "bid")}
    ensure_topics(bootstrap, topics.values(), 8)
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as template:
            yaml.safe_dump(executor_template(), template)
            template.flush()
            extra = client_config(kubeconfig, namespace, Path(template.name), executors)
            spark = spark_session(f"k8s://{api_server(kubeconfig)}", extra=extra)
            try:
                began = time.perf_counter()
                spec = GenerateSpec(1, 0, events, "json", topics=topics, tasks=executors)
                generate_to_kafka(spark, spec, bootstrap)
                seconds = time.perf_counter() - began
                for name, phase, ip in executor_pods(core, namespace):
                    print(f"executor pod {name} {phase} {ip}")
            finally:
                spark.stop()
        written = records_in(bootstrap, list(topics.values()))
        print(f"spark-k8s events={events} records={written} seconds={seconds:.1f}")
        return 0 if written == events else 1
    finally:
        delete_topics(bootstrap, topics.values())
        core.delete_namespace(namespace)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--executors", type=int, default=2)
    args = parser.parse_args(argv)
    return run(args.events, args.executors)


if __name__ == "__main__":
    sys.exit(main())
