"""Every protocol's in-process driver, in the order `capability.PROTOCOLS` names them: the one list
the property tests and the benchmarks run every protocol from (`auto` is a choice among these, not
a protocol of its own)."""

from __future__ import annotations

from streamshift_engine.migration.parallel_track import ParallelTrack
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.state_moving import MovingState, SavepointRestart, StateTransfer
from streamshift_engine.migration.unimico import UniMiCo

PROTOCOL_CLASSES: tuple[type[Protocol], ...] = (
    UniMiCo,
    ParallelTrack,
    MovingState,
    StateTransfer,
    SavepointRestart,
)
