"""A pod container run as a local process in its own process group, its output in a log file."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path


def wait_serving(
    process: subprocess.Popen[bytes],
    answers: Callable[[], bool],
    what: str,
    timeout: float,
    log_tail: Callable[[], str],
) -> None:
    """Wait until `answers()` (polled every 0.2 s); `RuntimeError` with the log's tail if
    `process` exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited: {log_tail()}")
        if answers():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} not up in {timeout} s: {log_tail()}")


def now_iso() -> str:
    """The current time as Kubernetes writes it (RFC 3339, seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ContainerProcess:
    """One run of a container's command. Stopping it stops its whole process group."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        log: Path,
        pid_file: Path,
        before_exec: Callable[[], None] | None = None,
    ) -> None:
        """Start `argv`; `before_exec` runs in the child before its command (its cgroups)."""
        self.started_at = now_iso()
        self.finished_at = ""
        self._kill_at = 0.0
        self._pid_file = pid_file
        log.parent.mkdir(parents=True, exist_ok=True)
        cwd.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            out.write(f"--- {self.started_at} start: {argv}\n".encode())
            out.flush()
            self._proc = subprocess.Popen(
                argv,
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=before_exec,
            )
        self.pid = self._proc.pid
        pid_file.parent.mkdir(parents=True, exist_ok=True)
        pid_file.write_text(f"{self.pid} {env.get('STREAMSHIFT_POD_UID', '')}\n")

    def exit_code(self) -> int | None:
        """The exit code once the process has ended (128+N for signal N), else None."""
        code = self._proc.poll()
        if code is None:
            if self._kill_at and time.monotonic() >= self._kill_at:
                self._signal(signal.SIGKILL)
            return None
        if not self.finished_at:
            self.finished_at = now_iso()
            self._signal(signal.SIGKILL)  # children left in the group die with the container
            self._pid_file.unlink(missing_ok=True)
        return 128 - code if code < 0 else code

    def stop(self, grace_seconds: float) -> None:
        """SIGTERM the group now and SIGKILL it after GRACE_SECONDS (checked by exit_code)."""
        if self._kill_at:
            return
        self._kill_at = time.monotonic() + max(grace_seconds, 0.0)
        self._signal(signal.SIGTERM if grace_seconds > 0 else signal.SIGKILL)

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
