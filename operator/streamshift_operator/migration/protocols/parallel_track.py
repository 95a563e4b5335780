"""Parallel track (seed 001 (Zhu et al., Dynamic Plan Migration), 4.2) driven through the workers'
control API (docs/control-api.openapi.yaml), in the order of the runtime's own stack test.

1. Each origin `split`s its partitions: the tuples it has read before its watermark `A` are old,
   and it answers `A` with the offsets (per `input:partition`) the target must read from, and
   whether its `ROWS` window has counted a tuple.
2. Each target `begin`s with `protocol: parallel-track`, its origin's `split`, the offsets of
   its own partitions and the origin's control address: it runs the plan from there with empty
   state and holds its output (admission refuses a target that would draw from several origins).
3. The target follows its origin (the runtime's `track_follow`): it releases the held results
   due by the watermark of the origin's last commit as soon as they are due, not at the
   operator's next tick, so the output runs on at the window's slide instead of pausing for
   about a window while the origin's old tuples expire; and the rest once the origin is done.
4. Once an origin's role in THIS migration is done (its plan holds no old tuple, it committed
   and handed the partitions over), its targets get `release-output` with the offsets it handed
   over at: the rest of their held results become visible after the origin's last one, with the
   dead letters of records the origin never read (the target did it already when it could reach
   the origin; the call then repeats nothing).
Every call is keyed by the migration's name, so a repeated tick repeats nothing. No state moves;
the events an origin read from the target's offsets on are processed by both.
"""

from typing import Any

from streamshift_operator.migration.protocols.unimico import (
    origin_of,
    release_done_targets,
)
from streamshift_operator.migration.run import Run


async def _splits(run: Run) -> dict[str, dict[str, Any]]:
    """Each origin's split answer (the worker repeats its first one)."""
    return {pod: await run.role(pod, "split", parts) for pod, parts in run.origin()}


def _own(offsets: dict[str, int], partitions: list[int]) -> dict[str, int]:
    """The offsets of `partitions` among an origin's `input:partition` offsets."""
    return {k: v for k, v in offsets.items() if int(k.rpartition(":")[2]) in partitions}


async def run_targets_from_split(run: Run) -> bool:
    """Origins split; every target begins from its origin's split and offsets."""
    splits = await _splits(run)
    for pod, parts in run.targets():
        origin = origin_of(run, parts)
        split = splits[origin]
        offsets = _own({str(k): int(v) for k, v in split["offsets"].items()}, parts)
        await run.role(
            pod,
            "begin",
            parts,
            split=split["split"],
            offsets=offsets,
            rows_counted=split["rows_counted"],
            origin=run.address(origin),
        )
    return True


def _read_twice(run: Run, splits: dict[str, dict[str, Any]]) -> int:
    """Events the origins have read from the targets' offsets on (targets read them too)."""
    twice = 0
    for pod, _ in run.origin():
        report = run.view.reports.get(pod)
        if report is None:
            continue
        for key, start in splits[pod]["offsets"].items():
            twice += max(0, report.offsets.get(str(key), int(start)) - int(start))
    return twice


async def drain_origin(run: Run) -> bool:
    """Release each target's output once its origin's old tuples are all done (targets release
    what is due before that by following their origin)."""
    splits = await _splits(run)
    before = run.status.cost.events_processed_twice or 0
    run.learned["state_bytes"] = 0
    run.learned["twice"] = max(before, _read_twice(run, splits))
    return await release_done_targets(run)
