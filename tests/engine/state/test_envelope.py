"""Instance snapshots across envelope versions: bytes written before envelope 2 (a codec
version 1 frame nesting the pipeline's own snapshot bytes; snapshots in S3 may be that old)
still restore; envelope 2 restores with copies, or adopts a writable buffer as views."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan import builtin
from streamshift_engine.runner import Instance, collect
from streamshift_engine.state import codec

# Made by `make_old_snapshot` with the engine of commit d973f6b (envelope 1, codec version 1).
OLD = Path(__file__).parent / "data" / "q8-envelope-1.snap"
PARTITIONS = (0, 1, 2, 3)
CUT = 60  # per (input, partition): the records fed before the snapshot


def inputs() -> dict[str, Batch]:
    config = GeneratorConfig(
        partitions=4,
        person_proportion=8,
        auction_proportion=1,
        bid_proportion=1,
        events_per_second=100,
    )
    events = generate(5, 0, 2000, config)
    return {name: events[name] for name in ("person", "auction")}


def feed(instance: Instance, below: int | None, at_least: dict[tuple[str, int], int]) -> None:
    """Each (input, partition)'s records from `at_least` up to offset `below` (None: all)."""
    for name, batch in inputs().items():
        for p in PARTITIONS:
            part = batch.take(batch.partition == p)
            high = (1 << 62) if below is None else below
            keep = (part.offset >= at_least.get((name, p), 0)) & (part.offset < high)
            if keep.any():
                instance.feed(name, p, part.take(keep))


def started() -> tuple[Instance, list[ResultBatch]]:
    instance = Instance(builtin("nexmark-q8"), PARTITIONS)
    feed(instance, CUT, {})
    return instance, instance.poll()


def make_old_snapshot() -> None:
    """Write the fixture (run with an engine of envelope 1 first on the path)."""
    OLD.write_bytes(started()[0].snapshot())


def rows(results: list[ResultBatch]) -> list[str]:
    return sorted(repr(sorted(row.items())) for row in collect(results))


def test_an_envelope_1_snapshot_restores_and_continues_exactly() -> None:
    old = OLD.read_bytes()
    assert struct.unpack_from("<5sH", old) == (b"SSNAP", 1)
    original, _ = started()
    covered = original.covered()
    after = original.poll()
    feed(original, None, {p: CUT for p in original.positions()})
    after += original.poll() + original.flush()
    restored = Instance(builtin("nexmark-q8"), PARTITIONS)
    restored.restore(old)
    assert restored.covered() == covered
    feed(restored, None, restored.covered())
    again = restored.poll() + restored.flush()
    assert rows(again) == rows(after)
    assert len(rows(after)) > 0


def test_envelope_2_copies_unless_a_writable_buffer_is_adopted() -> None:
    instance, _ = started()
    data = instance.snapshot([2, 3])
    assert codec.decode(data, copy=False)[0]["envelope"] == 2
    copied, adopted = Instance(instance.plan, [2, 3]), Instance(instance.plan, [2, 3])
    copied.restore(data)
    buffer = bytearray(data)
    adopted.restore(buffer, adopt=True)
    with pytest.raises(ValueError, match="writable"):
        Instance(instance.plan, [2, 3]).restore(data, adopt=True)
    views = [a for a in adopted.pipeline.arrays()[1].values() if a.dtype != object and len(a)]
    assert views and all(np.shares_memory(a, np.frombuffer(buffer, np.uint8)) for a in views)
    kept = [a for a in copied.pipeline.arrays()[1].values() if a.dtype != object and len(a)]
    assert not any(np.shares_memory(a, np.frombuffer(data, np.uint8)) for a in kept)
    assert copied.snapshot([2, 3]) == adopted.snapshot([2, 3])
    assert codec.decode(adopted.snapshot([2, 3]))[1].keys() == codec.decode(data)[1].keys()
