"""Spark on Kubernetes: the spark-submit command line and the Kubeflow `SparkApplication`.

Both run the Spark jobs of this package (`generate`, `verify`) with driver and executors as pods
of the engine image, which carries pyspark, a JRE, this package and the Kafka connector jars
(`IMAGE_JARS_DIR`, filled from `dev/setup-spark.sh`'s cache). The driver's service account
needs to create and delete its executor pods, a Service and ConfigMaps (`deploy/spark/rbac.yaml`).
`deploy/spark/sparkapplication.yaml` is `render_application()` of the defaults, checked for drift
by tests/spark. `make e2e-kind` submits its generator with `submit_command`, so the pods it runs
ask for what these defaults ask for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from streamshift_engine.spark.session import SPARK_VERSION

IMAGE = "streamshift/spark:0.1.0"
APP_FILE = "local:///opt/streamshift/engine-image/streamshift_engine/spark/cli.py"
IMAGE_JARS_DIR = "/opt/streamshift/spark-jars"
SERVICE_ACCOUNT = "streamshift-spark"
CPU_REQUEST = "100m"  # per driver and executor pod; Spark's default asks a whole core each
MEMORY = "2g"  # per driver and executor JVM
DEFAULT_ARGS = (
    *("verify", "--query", "nexmark-q5", "--topic", "nexmark-q5-out"),
    *("--bootstrap", "kafka.streamshift.svc:9092", "--master", ""),
)


def image_jars(jar_names: Sequence[str]) -> str:
    """`spark.jars` inside the image: the connector jars under `IMAGE_JARS_DIR`."""
    return ",".join(f"local://{IMAGE_JARS_DIR}/{name}" for name in sorted(jar_names))


def submit_command(
    api_server: str,
    namespace: str,
    app_args: Sequence[str],
    jar_names: Sequence[str],
    name: str = "streamshift-spark",
    image: str = IMAGE,
    executors: int = 2,
    spark_submit: str = "spark-submit",
    memory: str = MEMORY,
    extra_conf: Mapping[str, str] | None = None,
) -> list[str]:
    """spark-submit in Kubernetes cluster mode: the driver runs in a pod, executors in pods,
    each asking `CPU_REQUEST` (Spark's `spark.driver.cores` and `spark.executor.cores` stay
    one: the tasks' slots, not the pods' request). `extra_conf` adds or overrides settings.

    `app_args` are those of `streamshift_engine.spark.cli`, whose `--master` must be empty so
    the session takes the master spark-submit sets."""
    conf = {
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.container.image": image,
        "spark.kubernetes.authenticate.driver.serviceAccountName": SERVICE_ACCOUNT,
        "spark.executor.instances": str(executors),
        "spark.executor.memory": memory,
        "spark.driver.memory": memory,
        "spark.kubernetes.driver.request.cores": CPU_REQUEST,
        "spark.kubernetes.executor.request.cores": CPU_REQUEST,
        "spark.jars": image_jars(jar_names),
        "spark.kubernetes.driverEnv.PYSPARK_PYTHON": "python3",
        "spark.kubernetes.submission.waitAppCompletion": "false",
        **(extra_conf or {}),
    }
    command = [spark_submit, "--master", f"k8s://{api_server}", "--deploy-mode", "cluster"]
    command += ["--name", name]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, APP_FILE, *app_args]


def spark_application(
    name: str,
    namespace: str,
    app_args: Sequence[str],
    jar_names: Sequence[str],
    image: str = IMAGE,
    executors: int = 2,
) -> dict[str, Any]:
    """A `sparkoperator.k8s.io/v1beta2` SparkApplication running the same job."""
    labels = {"app.kubernetes.io/name": "streamshift", "app.kubernetes.io/component": "spark"}
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "mainApplicationFile": APP_FILE,
            "arguments": list(app_args),
            "sparkVersion": SPARK_VERSION,
            "deps": {"jars": image_jars(jar_names).split(",")},
            "restartPolicy": {"type": "Never"},
            "driver": {
                "cores": 1,
                "coreRequest": CPU_REQUEST,
                "memory": MEMORY,
                "serviceAccount": SERVICE_ACCOUNT,
                "labels": dict(labels),
            },
            "executor": {
                "cores": 1,
                "coreRequest": CPU_REQUEST,
                "instances": executors,
                "memory": MEMORY,
                "labels": dict(labels),
            },
        },
    }


def render_application(jar_names: Sequence[str]) -> str:
    """The checked-in example manifest: the oracle verifying q5 in namespace `streamshift`."""
    document = spark_application("streamshift-verify-q5", "streamshift", DEFAULT_ARGS, jar_names)
    header = "# generated by streamshift_engine.spark.k8s.render_application; do not edit\n"
    return header + yaml.safe_dump(document, sort_keys=False)


def manifest_path(repo: Path) -> Path:
    return repo / "deploy" / "spark" / "sparkapplication.yaml"
