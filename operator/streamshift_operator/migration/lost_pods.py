"""Lost pods of a migration, pure: which of its origin and target pods must be up in a phase,
and the first one that is not (gone, going, failed, or not ready for longer than a grace).

Watching the pods the phase needs, every tick, notices a lost pod within seconds rather than at
the phase's timeout (600 s by default), when nothing had said what went wrong meanwhile. A pod
gone, being deleted or Failed is lost at once; one not Ready (its container restarting, its
worker's liveness failing) is lost once it has been so for `GRACE_S` seconds, by its Ready
condition's `lastTransitionTime` (kept by the API server, so a restarted operator judges alike).

Which pods a phase needs: before HandingOver the origin pods run the query, so each must be up
(a savepoint-restart or state-transfer origin no longer once its snapshot is taken: the former
is stopped on purpose, the latter has let its partitions go, and a rollback restores from the
snapshot anyway); the target pods once started (in Preparing and StartingTarget they are still
starting: only a Failed one is lost, a deleted one is created again); in HandingOver the targets.
In Finalizing the targets are the query's pods, re-created by its reconciler once the migration
ended, and in RollingBack the rollback itself replaces what is missing: neither is watched.
"""

from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import Enum

from streamshift_operator.models.migration import TERMINAL, Phase, Protocol
from streamshift_operator.streamquery.observe import PodView

GRACE_S = 20.0
"""A pod not ready this long is lost. A worker restoring state or in a long step on a loaded
node misses its readiness probes (1 s apart, 3 failures) for a few seconds and is back; a
crash-looping or hung one stays not ready. Gone, deleted and failed pods are lost at once."""
ENDED = frozenset({"Failed", "Succeeded"})  # a worker pod never ends of its own accord


class Need(Enum):
    """What a phase needs of a side's pods."""

    NONE = "none"  # not watched
    STARTED = "started"  # starting: lost only when it ended (a missing one is created again)
    UP = "up"  # present, not going, not ended, and ready (within the grace)


def needs(phase: Phase, protocol: Protocol | None, snapshot_taken: bool) -> tuple[Need, Need]:
    """What `phase` needs of the origin pods and of the target pods."""
    if phase in TERMINAL or phase in (Phase.QUEUED, Phase.FINALIZING, Phase.ROLLING_BACK):
        return Need.NONE, Need.NONE
    if phase is Phase.HANDING_OVER:
        return Need.NONE, Need.UP
    released = snapshot_taken and protocol in (Protocol.SAVEPOINT_RESTART, Protocol.STATE_TRANSFER)
    origin = Need.NONE if released else Need.UP
    if phase is Phase.PREPARING:
        return origin, Need.STARTED
    if protocol is Protocol.SAVEPOINT_RESTART:
        targets = {Phase.STARTING_TARGET: Need.STARTED, Phase.RESTORING: Need.UP}
        return origin, targets.get(phase, Need.NONE)
    return origin, Need.UP


def lost_pod(
    phase: Phase,
    protocol: Protocol | None,
    snapshot_taken: bool,
    origin: Sequence[str],
    targets: Sequence[str],
    pods: Mapping[str, PodView],
    now: datetime,
    grace_s: float = GRACE_S,
) -> str | None:
    """Why the first pod the phase needs is lost (naming it), or None while all are up."""
    origin_need, target_need = needs(phase, protocol, snapshot_taken)
    for side, names, need in (("origin", origin, origin_need), ("target", targets, target_need)):
        for name in names:
            why = _lost(pods.get(name), need, now, grace_s)
            if why is not None:
                return f"{side} pod {name} {why}"
    return None


def _lost(pod: PodView | None, need: Need, now: datetime, grace_s: float) -> str | None:
    if need is Need.NONE:
        return None
    if pod is None:
        return None if need is Need.STARTED else "is gone"
    if pod.phase in ENDED:
        return f"has ended (phase {pod.phase})"
    if need is Need.STARTED:
        return None
    if pod.deleting:
        return "is being deleted"
    if pod.ready or pod.ready_since is None:
        return None
    waited = (now - pod.ready_since).total_seconds()
    return f"has not been ready for {waited:.0f} s" if waited > grace_s else None


def lost_while_starting(
    targets: Sequence[str], created: Sequence[str], pods: Mapping[str, PodView]
) -> list[str]:
    """The target pods this migration created that are gone now: lost while starting, to be
    created again. Judged by their absence, not by a deletion in flight, which a fast node (the
    local node agent removes a deleted pod within its 0.5 s tick) finishes between two ticks."""
    return [name for name in targets if name in created and name not in pods]
