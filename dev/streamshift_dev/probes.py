"""Readiness and liveness probes (httpGet, tcpSocket, exec) against a pod's loopback address."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request

from streamshift_dev.kube import Obj, get

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _port(container: Obj, port: object) -> int:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        return int(port)
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return int(p["containerPort"])
    raise ValueError(f"no container port named {port!r}")


def run_probe(probe: Obj, container: Obj, ip: str) -> bool:
    """True when PROBE succeeds against IP within its timeoutSeconds."""
    timeout = float(probe.get("timeoutSeconds") or 1)
    try:
        if "httpGet" in probe:
            http = probe["httpGet"]
            scheme = str(http.get("scheme") or "HTTP").lower()
            url = f"{scheme}://{ip}:{_port(container, http['port'])}{http.get('path') or '/'}"
            req = urllib.request.Request(url)
            for h in http.get("httpHeaders") or []:
                req.add_header(h["name"], h["value"])
            with _NO_PROXY.open(req, timeout=timeout) as resp:
                return 200 <= int(resp.status) < 400
        if "tcpSocket" in probe:
            port = _port(container, probe["tcpSocket"]["port"])
            with socket.create_connection((ip, port), timeout=timeout):
                return True
        if "exec" in probe:
            cmd = [str(c) for c in get(probe, "exec", "command", default=[])]
            return subprocess.run(cmd, timeout=timeout, capture_output=True).returncode == 0
    except (OSError, ValueError, urllib.error.URLError, subprocess.TimeoutExpired):
        return False
    return False


class ProbeState:
    """Thresholds and timing of one probe: result() says pass/fail, probing when it is due."""

    def __init__(self, probe: Obj, started: float) -> None:
        self.probe = probe
        self.period = float(probe.get("periodSeconds") or 10)
        self.success_threshold = int(probe.get("successThreshold") or 1)
        self.failure_threshold = int(probe.get("failureThreshold") or 3)
        self._next = started + float(probe.get("initialDelaySeconds") or 0)
        self._successes = 0
        self._failures = 0
        self.passing = False
        self.failed = False  # failureThreshold consecutive failures reached

    def tick(self, container: Obj, ip: str) -> None:
        """Probe if due, and update passing / failed."""
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.period
        if run_probe(self.probe, container, ip):
            self._successes, self._failures = self._successes + 1, 0
            if self._successes >= self.success_threshold:
                self.passing, self.failed = True, False
        else:
            self._successes, self._failures = 0, self._failures + 1
            if self._failures >= self.failure_threshold:
                self.passing, self.failed = False, True
