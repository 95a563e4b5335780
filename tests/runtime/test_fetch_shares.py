"""The source's fetch sizes: one fetch response has room for every partition's share, so a worker
behind on all its partitions reads each of them in every response (`partition_fetch_bytes`)."""

from __future__ import annotations

import json

import pytest
from streamshift_engine.runtime.config import load
from streamshift_engine.runtime.source import (
    FETCH_MAX_BYTES,
    PARTITION_FETCH_MAX_BYTES,
    PARTITION_FETCH_MIN_BYTES,
    partition_fetch_bytes,
)

from .test_config import ENV


def q8(partitions: int) -> dict[str, str]:
    sources = [{"name": n, "topic": n, "partitions": partitions} for n in ("person", "auction")]
    return {
        **ENV,
        "STREAMSHIFT_PLAN": "{builtin: nexmark-q8}",
        "STREAMSHIFT_PARTITIONS": "0",
        "STREAMSHIFT_SOURCES": json.dumps(sources),
    }


@pytest.mark.parametrize("partitions", [1, 2, 4, 8, 16, 32, 64])
def test_every_partition_of_every_input_fits_in_one_fetch_response(partitions: int) -> None:
    share = partition_fetch_bytes(load(q8(partitions)))
    assert 2 * partitions * share <= FETCH_MAX_BYTES
    assert PARTITION_FETCH_MIN_BYTES <= share <= PARTITION_FETCH_MAX_BYTES


def test_few_partitions_keep_the_largest_share_and_many_the_smallest() -> None:
    assert partition_fetch_bytes(load(q8(1))) == PARTITION_FETCH_MAX_BYTES
    assert partition_fetch_bytes(load(q8(4))) == FETCH_MAX_BYTES // 8  # q8 on 4 partitions: 1 MB
    assert partition_fetch_bytes(load(q8(1024))) == PARTITION_FETCH_MIN_BYTES
