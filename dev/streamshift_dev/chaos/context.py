"""What every chaos scenario runs against: the shared stack, the operator process (which a
scenario may kill and start again), a folder for logs and private servers, and its namespace."""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from streamshift_dev.runtime_run import clean_up
from streamshift_dev.stack_driver import Kube, OperatorProcess, Stack


class Operator:
    """The operator process watching the run's namespaces; `kill` SIGKILLs it by its process
    id and `start` runs a new one (what a Deployment's restart does)."""

    def __init__(self, stack: Stack, pattern: str, logs: Path) -> None:
        self.stack, self.pattern, self.logs = stack, pattern, logs
        self.lock = threading.Lock()
        self.starts = 0
        self.process = self._new()

    def _new(self) -> OperatorProcess:
        self.starts += 1
        return OperatorProcess(self.stack, self.pattern, self.logs / f"operator-{self.starts}.log")

    def kill(self) -> None:
        with self.lock:
            os.kill(self.process.process.pid, signal.SIGKILL)
            self.process.process.wait(10)

    def start(self) -> None:
        with self.lock:
            self.process = self._new()

    def stop(self) -> None:
        with self.lock:
            self.process.stop()


@dataclass(frozen=True)
class Context:
    """One scenario's surroundings: `ns` is its namespace (created by the scenario); `cleaner`
    removes finished namespaces while the next scenario runs."""

    kube: Kube
    stack: Stack
    operator: Operator
    folder: Path
    ns: str
    cleaner: ThreadPoolExecutor

    def clean_up(self, stack: Stack | None = None) -> None:
        """Remove the namespace, its topics and snapshots: on the shared stack in the
        background; on a private server (`stack`) now, before the server stops."""
        if stack is None or stack == self.stack:
            self.cleaner.submit(clean_up, self.kube, self.stack, self.ns)
        else:
            clean_up(self.kube, stack, self.ns)
