"""Adopting partitions: restore their snapshots, then replay what committed output covers.

`adopt` serves a (re)start and a migration target alike: per partition it restores the snapshot
covering the most input (positions `C`), reads the query group's committed positions `G` (the
input that committed output already reflects, whoever committed it, with that instance's
watermark `w` then) and replays `C..G`. During the replay a dead letter is suppressed when its
record lies below `G` (`unseen_letters`; the other positions' records are new), and a result when
its committer emitted it: a windowed result whose window ended at or before `w`, a window-less one
whose newest tuple is older than `w` (`unseen`). A committer that split its output with a
hand-off's target marked its commits so: then what the output holds decides, replayed or not
(`published`). The rest is new: a target holding fewer
partitions than its origin reaches a later watermark on the same input. `end_replay` switches to
live output and re-reads everything fetched past `G`. `restore_saved` and `resume` are the two
halves, the worker's side of a state-moving target's `StatePort.restore_saved` and
`resume_from` (moving-state's target receives its state from the origin over HTTP instead).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter
from streamshift_engine.runner import Instance
from streamshift_engine.runtime import published
from streamshift_engine.runtime.manifest import Manifest, choose, expired
from streamshift_engine.runtime.source import Position

if TYPE_CHECKING:
    from streamshift_engine.runtime.loop import Worker

NEVER = np.iinfo(np.int64).min


def adopt(worker: Worker, partitions: Collection[int]) -> dict[str, object]:
    """Take over `partitions` at a (re)start: restore, then resume from what the state covers."""
    covers, report = restore_saved(worker, partitions)
    resume(worker, covers)
    return {"partitions": sorted(partitions), **report}


def restore_saved(
    worker: Worker, partitions: Collection[int], migration: str | None = None
) -> tuple[dict[Position, int], dict[str, object]]:
    """Restore the snapshots covering the most input of `partitions` (the worker must hold
    none: replay suppresses all its output); answer the positions the state covers (0 where
    it covers none: replay suppresses what is committed) and the objects restored. A
    migration's target refuses the snapshots its origin saved for it under another plan
    version: restored by operator id into another plan they fail, or lose results where no id
    matches (state-transfer and savepoint-restart move a plan, they cannot change it)."""
    held = worker.instance.assigned
    if held:
        raise ValueError(f"worker already holds partitions {sorted(held)}")
    plan, version = worker.config.plan, worker.config.plan_version
    manifests = worker.store.manifests()
    saved_for = {m.plan_version for m in manifests if migration and m.migration == migration}
    if saved_for - {version}:
        raise ValueError(
            f"the origin of migration {migration} saved its state under plan version "
            f"{', '.join(sorted(saved_for - {version}))}, this worker runs {version}: a state "
            "restored by operator id cannot change the plan (use parallel-track, moving-state "
            "or auto)"
        )
    chosen = choose(manifests, partitions, version)
    for manifest, wanted in chosen:
        data = worker.store.load(manifest)
        if set(wanted) != set(manifest.partitions):  # only some: cut them out of a scratch copy
            scratch = Instance(plan, manifest.partitions)
            scratch.restore(data)
            data = scratch.snapshot(wanted)
        worker.instance.restore(data)
    worker.restored_from = min((m.created for m, _ in chosen), default=None)
    return covered(worker, partitions), {"restored": [m.object_key for m, _ in chosen]}


def covered(worker: Worker, partitions: Collection[int]) -> dict[Position, int]:
    """Per position of `partitions`, the first offset the instance's state does not cover."""
    positions = [(spec.name, p) for spec in worker.config.plan.inputs for p in sorted(partitions)]
    covered = worker.instance.covered()
    return {position: covered.get(position, 0) for position in positions}


def resume(worker: Worker, start: Mapping[Position, int]) -> dict[Position, int]:
    """Own the partitions of `start` with their state restored into the instance: read from
    `start`, replaying up to the committed positions; answer the events read again per
    position."""
    positions = list(start)
    worker.instance.assigned = set(worker.instance.assigned or ()) | {p for _, p in positions}
    committed = worker.source.committed(positions)
    worker.consumed.update(start)
    replay = {p: c.event_offset for p, c in committed.items() if c.event_offset > start[p]}
    worker.limit.update(replay)
    for (_, partition), c in committed.items():
        worker.emitted_below[partition] = c.watermark
    if any(c.split for c in committed.values()):
        worker.published = published.read(worker.config, positions, worker.restored_from)
    worker.source.seek(dict(start))
    worker.phase = "replaying" if worker.limit else "running"
    return {position: offset - start[position] for position, offset in sorted(replay.items())}


def unseen(worker: Worker, results: list[ResultBatch]) -> list[ResultBatch]:
    """The replayed results that the committed output does not hold."""
    kept = []
    for batch in results:
        if not len(batch):
            continue
        marks = [worker.emitted_below.get(p) for p in batch.partition.tolist()]
        below = np.array([NEVER if m is None else m for m in marks], dtype=np.int64)
        windowed = batch.window_end >= 0
        seen = np.where(windowed, batch.window_end <= below, batch.max_ts < below)
        if not seen.all():
            kept.append(batch.take(~seen))
    return kept


def unseen_letters(worker: Worker, letters: list[DeadLetter]) -> list[DeadLetter]:
    """The dead letters of a replay's step that the committed output does not hold: those of
    positions read past what their committer committed (a position not replayed, whose new
    records the same fetches bring: a record read there is new whatever the others replay)."""
    return [
        letter
        for letter in letters
        if letter.offset >= worker.limit.get((letter.source, letter.partition), 0)
    ]


def end_replay(worker: Worker) -> None:
    """Output from here on is new: drop the limits and re-read from the exact positions."""
    worker.limit.clear()
    worker.emitted_below.clear()
    worker.source.seek(dict(worker.consumed))
    worker.phase = "running"


def draft(worker: Worker, partitions: Collection[int] | None, migration: str | None) -> Manifest:
    """The manifest of a snapshot taken now (object key, size and checksum filled in on save)."""
    chosen = set(worker.instance.assigned or ()) if partitions is None else set(partitions)
    covered = tuple(
        (name, p, offset)
        for (name, p), offset in sorted(worker.instance.covered().items())
        if p in chosen
    )
    return Manifest(
        query=worker.config.query,
        plan_version=worker.config.plan_version,
        writer=worker.config.writer,
        seq=time.time_ns() // 1000,
        created=time.time(),
        partitions=tuple(sorted(chosen)),
        covered=covered,
        object_key="",
        size=0,
        sha256="",
        migration=migration,
    )


def expired_of(worker: Worker, manifests: Sequence[Manifest]) -> list[Manifest]:
    return expired(manifests, worker.config.writer, worker.config.snapshot_keep)
