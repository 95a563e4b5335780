"""One pod on the node: start its first container as a process, restart it by restartPolicy with
backoff, probe it, stop it on deletion, and say what status the pod should report. A container
with a CPU limit runs in a cgroup with that CPU quota (`cgroups`), removed when the pod ends."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from streamshift_dev.cgroups import ROOT, CpuLimit, pod_limit
from streamshift_dev.kube import Obj, get
from streamshift_dev.podenv import EnvError, expand
from streamshift_dev.podstatus import ContainerView, pod_status
from streamshift_dev.probes import ProbeState
from streamshift_dev.process import ContainerProcess, now_iso

MAX_BACKOFF = 60.0
# env_for(pod, container, ip) -> the process's environment; raises EnvError
EnvFor = Callable[[Obj, Obj, str], dict[str, str]]


@dataclass(frozen=True)
class Paths:
    """Where pod processes keep their files."""

    logs: Path
    work: Path
    pids: Path

    def log(self, pod: Obj, container: str) -> Path:
        """The log file of one container of POD (kept across restarts and pod re-creation)."""
        meta = pod["metadata"]
        return self.logs / f"{meta['namespace']}_{meta['name']}_{container}.log"


class PodRunner:
    """The lifecycle of one pod's process. tick() advances it; status() reports it."""

    def __init__(self, pod: Obj, ip: str, paths: Paths, cgroups: Path = ROOT) -> None:
        self.pod = pod
        self.ip = ip
        self.paths = paths
        self.container: Obj = pod["spec"]["containers"][0]
        self.cgroups = cgroups
        self.limit: CpuLimit | None = None
        self.policy = str(get(pod, "spec", "restartPolicy", default="Always"))
        self.start_time = str(get(pod, "status", "startTime", default="") or now_iso())
        image = str(self.container.get("image", ""))
        self.view = ContainerView(name=self.container["name"], image=image)
        prev = get(pod, "status", "containerStatuses", 0, default={})
        self.view.restart_count = int(prev.get("restartCount") or 0)
        if prev.get("started") or prev.get("lastState"):  # it ran before the agent restarted
            self.view.restart_count += 1
        self.proc: ContainerProcess | None = None
        self.reported: Obj = dict(get(pod, "status", default={}) or {})
        """The status last computed (the pod's as read until then): conditions keep their
        transition times from it, not from a watch event that may lag behind."""
        self.phase = "Pending"
        self._next_start = 0.0
        self._backoff = 1.0
        self._started_mono = 0.0
        self._readiness: ProbeState | None = None
        self._liveness: ProbeState | None = None

    @property
    def done(self) -> bool:
        """The pod reached Succeeded or Failed; nothing will run again."""
        return self.phase in ("Succeeded", "Failed")

    def tick(self, env_for: EnvFor) -> None:
        """Start, watch, probe or restart the process, as is due now."""
        if self.done:
            return
        if self.proc is None:
            if time.monotonic() >= self._next_start:
                self._start(env_for)
            return
        code = self.proc.exit_code()
        if code is None:
            self._probe()
        else:
            self._exited(code)

    def stop(self, grace: float) -> bool:
        """Stop the process (SIGTERM, SIGKILL after GRACE s); True once it is gone."""
        if self.proc is not None:
            self.proc.stop(grace)
            if self.proc.exit_code() is None:
                return False
        return self._release()

    def _release(self) -> bool:
        """Remove the pod's cgroups, if it has any; True once none are left."""
        if self.limit is not None and not self.limit.remove():
            return False
        self.limit = None
        return True

    def status(self) -> Obj:
        """The pod status to report now."""
        previous = {"status": self.reported}
        self.reported = pod_status(
            previous, self.phase, self.ip, self.start_time, self.view, now_iso()
        )
        return self.reported

    def _start(self, env_for: EnvFor) -> None:
        argv = [str(a) for a in (self.container.get("command") or [])]
        argv += [str(a) for a in (self.container.get("args") or [])]
        if not argv:
            self.view.waiting = (
                "CreateContainerConfigError",
                "the process node agent needs "
                "an explicit command (it cannot read the image's entrypoint)",
            )
            self._next_start = time.monotonic() + 5
            return
        try:
            env = env_for(self.pod, self.container, self.ip)
        except EnvError as exc:
            self.view.waiting = ("CreateContainerConfigError", str(exc))
            self._next_start = time.monotonic() + 2
            return
        argv = [expand(a, env) for a in argv]
        meta = self.pod["metadata"]
        try:
            self.limit = pod_limit(meta["uid"], self.container, self.cgroups)
            if self.limit is not None:
                self.limit.create()
        except (OSError, ValueError) as exc:
            self.view.waiting = ("CreateContainerConfigError", f"CPU limit: {exc}")
            self._next_start = time.monotonic() + 5
            return
        workdir = self.paths.work / meta["uid"]
        try:
            self.proc = ContainerProcess(
                argv,
                env,
                workdir,
                self.paths.log(self.pod, self.view.name),
                self.paths.pids / f"{meta['namespace']}_{meta['name']}.pid",
                None if self.limit is None else self.limit.enter,
            )
        except (OSError, subprocess.SubprocessError) as exc:  # the latter: entering the cgroups
            now = now_iso()
            self.view.terminated = {
                "exitCode": 128,
                "reason": "StartError",
                "message": str(exc),
                "startedAt": now,
                "finishedAt": now,
            }
            self._after_exit(128)
            return
        self.phase = "Running"
        self._started_mono = time.monotonic()
        self.view.running_since = self.proc.started_at
        self.view.waiting = self.view.terminated = None
        self.view.pid = self.proc.pid
        self.view.ready = "readinessProbe" not in self.container
        ready, live = self.container.get("readinessProbe"), self.container.get("livenessProbe")
        self._readiness = ProbeState(ready, self._started_mono) if ready else None
        self._liveness = ProbeState(live, self._started_mono) if live else None

    def _probe(self) -> None:
        if self._readiness is not None:
            self._readiness.tick(self.container, self.ip)
            self.view.ready = self._readiness.passing
        if self._liveness is not None:
            self._liveness.tick(self.container, self.ip)
            if self._liveness.failed and self.proc is not None:
                grace = float(get(self.pod, "spec", "terminationGracePeriodSeconds", default=30))
                self.proc.stop(grace)

    def _exited(self, code: int) -> None:
        assert self.proc is not None
        self.view.terminated = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": self.proc.started_at,
            "finishedAt": self.proc.finished_at,
        }
        if time.monotonic() - self._started_mono > 120:
            self._backoff = 1.0  # it ran a good while: restart quickly
        self.proc = None
        self._after_exit(code)

    def _after_exit(self, code: int) -> None:
        self.view.running_since = ""
        self.view.ready = False
        self.view.pid = 0
        restart = self.policy == "Always" or (self.policy == "OnFailure" and code != 0)
        if not restart:
            self.phase = "Succeeded" if code == 0 else "Failed"
            self._release()
            return
        self.view.last_terminated, self.view.terminated = self.view.terminated, None
        self.view.restart_count += 1
        message = f"back-off {self._backoff:.0f}s restarting the process"
        self.view.waiting = ("CrashLoopBackOff", message)
        self._next_start = time.monotonic() + self._backoff
        self._backoff = min(self._backoff * 2, MAX_BACKOFF)
