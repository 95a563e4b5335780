"""The migration protocols a user may name: a Migration's protocol and the autoscaler's.

Its own module because both the StreamQuery model (the autoscaler's protocol) and the Migration
model (which imports the StreamQuery's plan type) name it.
"""

from enum import StrEnum


class Protocol(StrEnum):
    """unimico, parallel-track, moving-state, state-transfer, savepoint-restart, or auto (the
    operator chooses from the plan and its state size)."""

    UNIMICO = "unimico"
    PARALLEL_TRACK = "parallel-track"
    MOVING_STATE = "moving-state"
    STATE_TRANSFER = "state-transfer"
    SAVEPOINT_RESTART = "savepoint-restart"
    AUTO = "auto"
