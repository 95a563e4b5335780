"""The one place a SparkSession is built: local or cluster master, connector jars from the cache.

The Kafka connector and its dependencies are fetched once by `dev/setup-spark.sh` into
`$STREAMSHIFT_CACHE/spark-jars/` and handed to Spark as `spark.jars`; `spark.jars.packages` is
never used, so a job downloads nothing when it runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SPARK_VERSION = "4.3.0"


def cache_dir() -> Path:
    """`$STREAMSHIFT_CACHE`, by default `~/.cache/streamshift`."""
    default = Path.home() / ".cache" / "streamshift"
    return Path(os.environ.get("STREAMSHIFT_CACHE", str(default)))


def connector_jars(directory: Path | None = None) -> list[Path]:
    """The cached connector jars, sorted; an error naming the setup step when there are none."""
    jars_dir = directory or cache_dir() / "spark-jars"
    jars = sorted(jars_dir.glob("*.jar"))
    if not any(j.name.startswith("spark-sql-kafka-0-10") for j in jars):
        raise FileNotFoundError(f"no Spark Kafka connector in {jars_dir}: run `make setup-spark`")
    return jars


def session_config(
    master: str = "local[2]", driver_memory: str = "2g", jars: list[Path] | None = None
) -> dict[str, str]:
    """Spark settings for a quiet, UI-less session with the Kafka connector on the classpath."""
    jar_list = connector_jars() if jars is None else jars
    config = {
        "spark.master": master,
        "spark.app.name": "streamshift",
        "spark.driver.memory": driver_memory,
        "spark.jars": ",".join(str(j) for j in jar_list),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "50000",
    }
    if master.startswith("local"):
        config["spark.driver.bindAddress"] = "127.0.0.1"
        config["spark.driver.host"] = "127.0.0.1"
    return config


def spark_session(
    master: str = "local[2]", driver_memory: str = "2g", extra: Mapping[str, str] | None = None
) -> Any:
    """Get or create the process's SparkSession with `session_config` (then `extra`) and
    WARN-level logs; an empty `master` keeps what spark-submit configured (Spark on Kubernetes
    in cluster mode)."""
    from pyspark.sql import SparkSession

    if not master:
        spark = SparkSession.builder.getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
        return spark
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    for key, value in {**session_config(master, driver_memory), **(extra or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
