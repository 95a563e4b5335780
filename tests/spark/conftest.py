"""One SparkSession for the whole Spark test package (it takes about 10 s to start)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from streamshift_engine.spark.session import spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = spark_session()
    yield session
    session.stop()
