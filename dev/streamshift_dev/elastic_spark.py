"""The elastic scenario's load from the Spark generator (`--load spark` or `--load spark-kube`):
the same rate shape and events as `elastic_load.Producing`, written by Spark jobs.

`spark.pacing.paced` runs the generator's streaming mode from this process (the driver): every
second one Spark job writes the events whose event time is due (`spark.generator`, JSON records,
each Kafka partition in index order), so event time runs at wall time as with the producer.
`spark` runs the jobs in a local Spark (`local[2]`); `spark-kube` on the local Kubernetes stack
in client mode (`spark.k8s_client`): the driver here, its executors pods of the run's namespace
that the node agent runs, so they go with the namespace.

Seed and generator config are the producer's, so `fed()` (everything written, for the
reference) is the same function of the events written. Spark writes bids too (every kind goes
to its topic; `{prefix}-bid` is made for them); q8 reads persons and auctions only, and
`records` counts those, as the producer's does.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.spark import k8s_client
from streamshift_engine.spark.generator import GenerateSpec, generate_to_kafka, records_frame
from streamshift_engine.spark.kafka import ensure_topics, stack_env
from streamshift_engine.spark.pacing import paced
from streamshift_engine.spark.session import spark_session

from streamshift_dev import elastic_load

LOADS = ("producer", "spark", "spark-kube")
INTERVAL_S = 1.0
"""Seconds between the Spark jobs (the generator's streaming mode's default)."""
EXECUTORS = 1
"""Executor pods of `spark-kube`: one is enough for the step's rates, and each is a JVM on the
two cores the CPU-limited workers share."""


class SparkLoad(elastic_load.Writing):
    """Writes `{prefix}-person`, `-auction` (and `-bid`) through Spark at the config's rate from
    `start()` (which returns once the Spark session, and in `kube_namespace` its executor pods,
    are up) until `stop()`."""

    def __init__(
        self,
        bootstrap: str,
        prefix: str,
        generator: GeneratorConfig,
        kube_namespace: str | None = None,
    ) -> None:
        super().__init__(generator)
        self.bootstrap, self.kube_namespace = bootstrap, kube_namespace
        self.topics = {kind: f"{prefix}-{kind}" for kind in ("person", "auction", "bid")}
        self.spark: Any = None
        self.own_session = False  # created here, not the process's session already running
        self.template: Path | None = None  # the executor pod template (`spark-kube`)
        tasks = 1 if kube_namespace is None else EXECUTORS
        self.base = GenerateSpec(
            elastic_load.SEED, 0, 0, "json", generator, self.topics, tasks=tasks
        )

    def start(self) -> None:
        from pyspark.sql import SparkSession

        ensure_topics(self.bootstrap, self.topics.values(), self.generator.partitions)
        self.own_session = SparkSession.getActiveSession() is None
        if self.kube_namespace is None:
            self.spark = spark_session("local[2]")
        else:
            kubeconfig = Path(stack_env()["KUBECONFIG"])
            self.template = Path(tempfile.mkstemp(prefix="executor-", suffix=".yaml")[1])
            self.template.write_text(yaml.safe_dump(k8s_client.executor_template()))
            os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
            extra = k8s_client.client_config(
                kubeconfig, self.kube_namespace, self.template, EXECUTORS
            )
            master = f"k8s://{k8s_client.api_server(kubeconfig)}"
            self.spark = spark_session(master, extra=extra)
        # the first event generated, not written: the executors' Python workers start and
        # import the generator before the first paced job, which would otherwise come late
        records_frame(self.spark, self.base.advanced(0, 1)).count()
        self.started = time.monotonic()
        super().start()

    def run(self) -> None:
        try:
            paced(self.base, math.inf, self._write, INTERVAL_S, stop=self.stopping.is_set)
        except BaseException as error:  # reported by stop()
            self.failure = error

    def _write(self, spec: GenerateSpec) -> None:
        generate_to_kafka(self.spark, spec, self.bootstrap)
        records = elastic_load.records_among(self.generator, spec.start_index, spec.count)
        self.wrote(spec.count, records)

    def stop(self) -> None:
        """Stop after the job running (each writes all it was given), then the session (and
        its executor pods)."""
        self.stopping.set()
        self.join(120)
        try:
            if self.spark is not None and self.own_session:  # not a session others use
                self.spark.stop()
        finally:
            if self.template is not None:
                self.template.unlink(missing_ok=True)
        if self.failure is not None:
            raise self.failure


def driver(
    load: str, bootstrap: str, prefix: str, generator: GeneratorConfig
) -> elastic_load.Driver:
    """The load driver `load` (one of `LOADS`) writing topics `{prefix}-...`; in `spark-kube`
    its executor pods run in the namespace `prefix`."""
    if load == "producer":
        return elastic_load.Producing(bootstrap, prefix, generator)
    if load == "spark":
        return SparkLoad(bootstrap, prefix, generator)
    if load == "spark-kube":
        return SparkLoad(bootstrap, prefix, generator, kube_namespace=prefix)
    raise ValueError(f"unknown load {load!r}: one of {', '.join(LOADS)}")
