"""Snapshot manifests: round trip, checksum, choice of snapshots to restore, retention."""

from __future__ import annotations

import pytest
from streamshift_engine.runtime.manifest import Manifest, checksum, choose, expired, verify


def manifest(writer: str, seq: int, covered: dict[int, int], **extra: object) -> Manifest:
    fields: dict[str, object] = {
        "query": "q",
        "plan_version": "v1",
        "writer": writer,
        "seq": seq,
        "created": float(seq),
        "partitions": tuple(sorted(covered)),
        "covered": tuple(("bids", p, o) for p, o in sorted(covered.items())),
        "object_key": f"{writer}/{seq}",
        "size": 3,
        "sha256": checksum(b"abc"),
        **extra,
    }
    return Manifest(**fields)  # type: ignore[arg-type]


def test_round_trip_and_checksum() -> None:
    m = manifest("w", 5, {0: 10, 1: 20}, migration="m-1")
    assert Manifest.from_json(m.to_json()) == m
    verify(m, b"abc")
    for bad in (b"abd", b"abcd"):
        with pytest.raises(ValueError, match="checksum"):
            verify(m, bad)


def test_choose_takes_per_partition_the_snapshot_covering_most_input() -> None:
    old = manifest("a", 1, {0: 50, 1: 50})
    newer_less = manifest("b", 2, {1: 40})
    other_plan = manifest("c", 9, {0: 99}, plan_version="v2")
    best_two = manifest("c", 3, {2: 70, 3: 80})
    picked = choose([old, newer_less, other_plan, best_two], {0, 1, 2}, "v1")
    assert picked == [(old, (0, 1)), (best_two, (2,))]
    assert choose([old], {5}, "v1") == []


def test_retention_keeps_the_writers_newest_and_migration_snapshots() -> None:
    own = [manifest("a", s, {0: s}) for s in (1, 2, 3, 4)]
    kept_for_migration = manifest("a", 0, {0: 0}, migration="m")
    other = manifest("b", 0, {0: 0})
    assert expired([*own, kept_for_migration, other], "a", keep=2) == [own[1], own[0]]
    assert expired(own, "a", keep=10) == []
