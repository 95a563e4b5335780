"""Classify a StreamQuery spec change; the largest change wins (Flink operator's DiffType).

The order is `IGNORE < RESCALE < PLAN_CHANGE < RESTART`:
- `IGNORE`: only operator-side settings changed (what deletion does to the snapshots).
- `RESCALE`: only `parallelism` changed; handled by a Migration (protocol `auto` by default).
- `PLAN_CHANGE`: the plan changed; handled by a Migration.
- `RESTART`: anything the running pods were started with (topics, Kafka, resources, image,
  snapshot store, credentials) changed; the pods are replaced with a savepoint-restart.
"""

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from streamshift_operator.models.streamquery import StreamQuerySpec


class DiffType(IntEnum):
    IGNORE = 0
    RESCALE = 1
    PLAN_CHANGE = 2
    RESTART = 3


# Top-level spec fields (wire names) and what a change of each needs; dotted paths refine.
_FIELD_TYPES: dict[str, DiffType] = {
    "snapshot.retention.onDelete": DiffType.IGNORE,
    "parallelism": DiffType.RESCALE,
    "plan": DiffType.PLAN_CHANGE,
}


@dataclass(frozen=True)
class SpecDiff:
    """The classification and the changed fields (wire paths, sorted) that decided it."""

    type: DiffType
    fields: tuple[str, ...]


def classify(old: StreamQuerySpec, new: StreamQuerySpec) -> SpecDiff:
    """Compare two specs field by field; unknown fields count as a restart (the safe side)."""
    changed = sorted(_changed_paths(old.wire(), new.wire(), ""))
    kinds = [_type_of(path) for path in changed]
    return SpecDiff(type=max(kinds, default=DiffType.IGNORE), fields=tuple(changed))


def _type_of(path: str) -> DiffType:
    for prefix, kind in _FIELD_TYPES.items():
        if path == prefix or path.startswith(prefix + "."):
            return kind
    return DiffType.RESTART


def _changed_paths(old: Any, new: Any, path: str) -> set[str]:
    if old == new:
        return set()
    if isinstance(old, dict) and isinstance(new, dict) and not path.startswith("plan"):
        paths: set[str] = set()
        for key in old.keys() | new.keys():
            child = f"{path}.{key}" if path else key
            paths |= _changed_paths(old.get(key), new.get(key), child)
        return paths
    return {path}
