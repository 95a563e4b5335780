"""A fault injected into a running Migration at a chosen phase, and what followed: when the
Migration's status first named the fault (detection) and when the query ran again after the
Migration ended (recovery).

`MigrationWatch` polls the Migration and its query every `EVERY_S` seconds beside the driver
(`runtime_run.run_case`, which feeds input and checks the output): at the first poll in the
fault's phase it injects the fault; then it reads the status for the fault's mention (a lost
pod's name), preferring the server's own time for it (the `enteredAt` of the phase record whose
message names it), and waits for the query to be Running after the Migration's terminal phase.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from streamshift_dev.stack_driver import MIG, TERMINAL, Kube

EVERY_S = 0.1
LIMIT_S = 420.0  # the driver's own limits (query ready, migration, output) come first


@dataclass(frozen=True)
class Fault:
    """What to do at `phase`: `inject(status)` acts and answers what the Migration's status
    must mention once it noticed (None: nothing to notice, e.g. the operator itself was killed);
    the time the fault counts from is the end of `inject` unless it called `mark`."""

    phase: str
    inject: Callable[[dict[str, Any], Callable[[], None]], str | None]
    silent_if_succeeded: bool = False
    """A Migration that still Succeeded, exact, need not mention it: an origin pod lost once
    its part was done (a moving-state origin deleted in MovingState after its state moved)."""


class MigrationWatch(threading.Thread):
    """Injects `fault` into Migration `m` of query `q` in `ns` and times what followed."""

    def __init__(self, kube: Kube, ns: str, fault: Fault) -> None:
        super().__init__(daemon=True)
        self.kube, self.ns, self.fault = kube, ns, fault
        self.injected_at: float | None = None
        self.detected_at: float | None = None
        self.recovered_at: float | None = None
        self.mention: str | None = None
        self.phases: list[str] = []
        self.error: str | None = None
        self.done = threading.Event()

    def mark(self) -> None:
        """The fault's moment is now (e.g. the broker came back)."""
        self.injected_at = time.time()

    def run(self) -> None:
        deadline = time.monotonic() + LIMIT_S
        try:
            while time.monotonic() < deadline and not self.done.is_set():
                if self._step():
                    return
                time.sleep(EVERY_S)
        except Exception as error:  # reported with the scenario, not lost in a thread
            self.error = f"{type(error).__name__}: {error}"

    def _step(self) -> bool:
        """One poll; True once there is nothing more to watch."""
        status = self._status()
        phase = str(status.get("phase", ""))
        if not self.phases or self.phases[-1] != phase:
            self.phases.append(phase)
        if self.injected_at is None:
            if phase == self.fault.phase:
                self.mention = self.fault.inject(status, self.mark)
                if self.injected_at is None:
                    self.mark()
            return phase in TERMINAL  # ended without passing through the phase: missed
        if self.mention is not None and self.detected_at is None:
            self.detected_at = _mentioned(status, self.mention, self.injected_at)
        if phase in TERMINAL and self.kube.running(self.ns, "q"):
            self.recovered_at = time.time()
            return True
        return False

    def _status(self) -> dict[str, Any]:
        try:
            return self.kube.status(MIG, self.ns, "m")
        except ApiException as error:
            if error.status == 404:  # not created yet
                return {}
            raise

    @property
    def detection_s(self) -> float | None:
        if self.injected_at is None or self.detected_at is None:
            return None
        return max(self.detected_at - self.injected_at, 0.0)

    @property
    def recovery_s(self) -> float | None:
        if self.injected_at is None or self.recovered_at is None:
            return None
        return self.recovered_at - self.injected_at


def _mentioned(status: dict[str, Any], mention: str, since: float) -> float | None:
    """When the status first named `mention` after `since`: the `enteredAt` of a phase record
    entered since (half a second's slack for the clocks) whose message names it, else now if
    the status message names it, else None."""
    for record in status.get("phaseHistory") or []:
        entered = datetime.fromisoformat(str(record["enteredAt"]).replace("Z", "+00:00"))
        if entered.timestamp() >= since - 0.5 and mention in str(record.get("message") or ""):
            return entered.timestamp()
    if mention in str(status.get("message") or ""):
        return time.time()
    return None
