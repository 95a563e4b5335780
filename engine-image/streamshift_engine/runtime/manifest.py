"""Snapshot manifests: what a snapshot object holds, and which snapshots to keep and restore.

A snapshot is two S3 objects written in this order: the immutable state object, then a small
JSON manifest naming it with its size and sha256. A manifest exists only for a complete object,
so a reader never sees a half-written snapshot. Pure functions here choose the snapshots to
restore (per partition, the one covering the most input) and the ones retention deletes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import orjson

FORMAT = 1


@dataclass(frozen=True)
class Manifest:
    """One complete snapshot: its object, checksum and the input offsets its state covers."""

    query: str
    plan_version: str
    writer: str
    seq: int
    created: float
    partitions: tuple[int, ...]
    covered: tuple[tuple[str, int, int], ...]
    object_key: str
    size: int
    sha256: str
    migration: str | None = None

    def to_json(self) -> bytes:
        return orjson.dumps({"format": FORMAT, **asdict(self)}, option=orjson.OPT_SORT_KEYS)

    @classmethod
    def from_json(cls, data: bytes) -> Manifest:
        raw: dict[str, Any] = orjson.loads(data)
        if raw.pop("format", None) != FORMAT:
            raise ValueError("unknown manifest format")
        raw["partitions"] = tuple(raw["partitions"])
        raw["covered"] = tuple((str(n), int(p), int(o)) for n, p, o in raw["covered"])
        return cls(**raw)

    def reach(self, partition: int) -> int:
        """How much input of `partition` the snapshot covers (sum over inputs)."""
        return sum(offset for _, p, offset in self.covered if p == partition)


def checksum(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verify(manifest: Manifest, data: bytes) -> None:
    """Raise `ValueError` unless `data` is the object `manifest` describes."""
    if len(data) != manifest.size or checksum(data) != manifest.sha256:
        raise ValueError(f"snapshot {manifest.object_key} fails its checksum")


def choose(
    manifests: Sequence[Manifest], partitions: Collection[int], plan_version: str
) -> list[tuple[Manifest, tuple[int, ...]]]:
    """The snapshots to restore for `partitions`: per partition the manifest of this plan
    version covering the most of its input (the latest on ties), grouped by manifest."""
    chosen: dict[int, Manifest] = {}
    for manifest in manifests:
        if manifest.plan_version != plan_version:
            continue
        for partition in set(manifest.partitions) & set(partitions):
            best = chosen.get(partition)
            mine = (manifest.reach(partition), manifest.seq)
            if best is None or mine > (best.reach(partition), best.seq):
                chosen[partition] = manifest
    grouped: dict[str, tuple[Manifest, list[int]]] = {}
    for partition, manifest in sorted(chosen.items()):
        grouped.setdefault(manifest.object_key, (manifest, []))[1].append(partition)
    return [(manifest, tuple(parts)) for manifest, parts in grouped.values()]


def expired(manifests: Sequence[Manifest], writer: str, keep: int) -> list[Manifest]:
    """The writer's manifests beyond its newest `keep` (snapshots taken for a migration are
    kept: a target may still be restoring them)."""
    own = sorted(
        (m for m in manifests if m.writer == writer and m.migration is None),
        key=lambda m: m.seq,
        reverse=True,
    )
    return own[keep:]
