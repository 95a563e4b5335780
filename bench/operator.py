"""`make bench-operator`: the operator's own numbers on the local stack.

It starts the operator (`kopf run`, its own process, watching one fresh namespace), waits for
its liveness endpoint, and measures:
1. ready-s: a Nexmark q5 StreamQuery applied until its status says Running (every pod Running
   and its worker reporting on the control API);
2. unimico-s: with bids fed at wall-clock speed (event time runs as fast as the clock), a
   `unimico` Migration moving the query's instance applied until it is Succeeded (goal: the
   10 s window + 5 s); printed with its phase timeline, the target pod's start-up (when the
   pod was first seen, Running, answering `/readyz` and Ready, sampled every 0.1 s), the
   protocol's own wait (the origin runs until its watermark passes `A + W - s`: `A - ts_start`
   from the target's hand-off report, plus the window size less its slide, in event time) and
   the cost the Migration's status records (duration, output gap during and before);
3. rss-mb: 20 more StreamQuery objects applied at once until all are Ready, then the RSS of the
   operator process (by its PID).
Everything it created goes with its namespace (snapshots under retention Delete first).
Prints the final line `operator ready-s=N unimico-s=N rss-mb=N`.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes import client, config
from streamshift_dev.workers import stack_env
from streamshift_operator.resources.pods import CONTROL_PORT

from e2e.demo import feed

GROUP, VERSION, SQ, MIG = "streamshift.io", "v1alpha1", "streamqueries", "migrations"
# steady output before the move: its cost sets the gap during it against an equal stretch before
SETTLE_S = 14.0
PARTITIONS, WINDOW_S, SLIDE_S, MANY = 4, 10, 2, 20
TOKEN = "bench-control-token"
REPO = Path(__file__).resolve().parent.parent


def query(name: str, ns: str, env: dict[str, str], delete_snapshots: bool) -> dict[str, Any]:
    snapshot: dict[str, Any] = {
        "endpoint": env["S3_ENDPOINT"],
        "bucket": "streamshift-bench",
        "intervalSeconds": 5,
        "credentials": {
            "accessKey": {"name": "s3", "key": "access"},
            "secretKey": {"name": "s3", "key": "secret"},
        },
    }
    if delete_snapshots:
        snapshot["retention"] = {"onDelete": "Delete"}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "StreamQuery",
        "metadata": {"name": name},
        "spec": {
            "plan": {"builtin": "nexmark-q5"},
            "kafka": {"bootstrapServers": env["KAFKA_BOOTSTRAP"]},
            "sources": [{"name": "bid", "topic": f"{ns}-bid", "partitions": PARTITIONS}],
            "sinks": [{"name": "out", "topic": f"{ns}-{name}-out", "partitions": PARTITIONS}],
            "snapshot": snapshot,
            "controlToken": {"name": "control", "key": "token"},
        },
    }


def wait(what: str, check: Callable[[], Any], timeout: float, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


class Bench:
    """One namespace, its Secrets and an operator process watching it."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        api: Any = config.new_client_from_config(config_file=env["KUBECONFIG"])
        self.core: Any = client.CoreV1Api(api)
        self.custom: Any = client.CustomObjectsApi(api)
        self.ns = f"bench-op-{int(time.time())}"

    def setup(self, log: Path) -> subprocess.Popen[bytes]:
        subprocess.run(
            [str(Path(self.env["KUBECTL"])), "apply", "-f", str(REPO / "crds")],
            check=True,
            capture_output=True,
            env={**os.environ, "KUBECONFIG": self.env["KUBECONFIG"]},
        )
        self.core.create_namespace({"metadata": {"name": self.ns}})
        for name, data in {
            "control": {"token": TOKEN},
            "s3": {"access": self.env["S3_ACCESS_KEY"], "secret": self.env["S3_SECRET_KEY"]},
        }.items():
            self.core.create_namespaced_secret(
                self.ns, {"metadata": {"name": name}, "stringData": data}
            )
        kopf = REPO / ".venv" / "bin" / "kopf"
        health = f"http://127.0.0.1:{free_port()}/healthz"
        args = [str(kopf), "run", "--standalone", "--namespace", self.ns, "--liveness", health]
        process = subprocess.Popen(
            [*args, "-m", "streamshift_operator.handlers"],
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            env={**os.environ, "KUBECONFIG": self.env["KUBECONFIG"]},
        )
        wait("the operator's liveness endpoint", lambda: answers(health), 60, every=0.2)
        return process

    def status(self, plural: str, name: str) -> dict[str, Any]:
        body = self.custom.get_namespaced_custom_object(GROUP, VERSION, self.ns, plural, name)
        return dict(body.get("status") or {})

    def apply(self, plural: str, body: dict[str, Any]) -> None:
        self.custom.create_namespaced_custom_object(GROUP, VERSION, self.ns, plural, body)

    def running(self, name: str) -> bool:
        return self.status(SQ, name).get("phase") == "Running"

    def ready(self) -> float:
        began = time.monotonic()
        self.apply(SQ, query("q5", self.ns, self.env, delete_snapshots=True))
        wait("q5 Running", lambda: self.running("q5"), 120)
        return time.monotonic() - began

    def pod_clock(self, name: str, began: float, seen: dict[str, float]) -> None:
        """Record when the pod first exists, runs, answers `/readyz` and is Ready."""
        try:
            pod = self.core.read_namespaced_pod(name, self.ns)
        except client.ApiException:
            return
        now = time.monotonic() - began
        seen.setdefault("created", now)
        if pod.status.phase == "Running":
            seen.setdefault("running", now)
        url = f"http://{pod.status.pod_ip}:{CONTROL_PORT}/readyz"
        if "answering" not in seen and pod.status.pod_ip and answers(url):
            seen["answering"] = now
        if any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []):
            seen.setdefault("ready", now)

    def handoff(self, name: str) -> dict[str, Any] | None:
        """The UniMiCo target's hand-off report (`ts_start`, `activation`) once activated."""
        pod = self.core.read_namespaced_pod(name, self.ns)
        request = urllib.request.Request(
            f"http://{pod.status.pod_ip}:{CONTROL_PORT}/v1/status",
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=1) as response:
                roles = json.load(response).get("roles") or {}
                report = roles.get("move") or {}
        except OSError:
            return None
        return report if report.get("activation") is not None else None

    def unimico(self) -> tuple[float, dict[str, Any]]:
        wait("q5 to report a watermark", lambda: self.status(SQ, "q5").get("watermark"), 60)
        time.sleep(SETTLE_S)
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Migration",
            "metadata": {"name": "move"},
            "spec": {
                "queryRef": {"name": "q5"},
                "protocol": "unimico",
                "target": {"moveInstances": [0]},
            },
        }
        began, mark = time.monotonic(), self.status(SQ, "q5")["watermark"]
        self.apply(MIG, body)
        terminal = ("Succeeded", "Failed", "RolledBack")
        target = f"q5-e{self.status(SQ, 'q5').get('epoch', 0) + 1}-0"
        seen: dict[str, float] = {}
        handoff: dict[str, Any] = {}

        def finished() -> dict[str, Any] | None:
            if "ready" not in seen:
                self.pod_clock(target, began, seen)
            elif not handoff:
                handoff.update(self.handoff(target) or {})
            return _phase_in(self.status(MIG, "move"), terminal)

        status = wait("the Migration", finished, 180)
        wall = time.monotonic() - began
        print("target pod " + " ".join(f"{k}={v:.1f}" for k, v in seen.items()) + " s")
        if handoff:
            ahead = (handoff["activation"] - handoff["ts_start"]) / 1000
            print(
                f"inherent: the origin runs until its watermark passes A + W - s: "
                f"(A - ts_start) + W - s = {ahead:.1f} + {WINDOW_S - SLIDE_S} s of event time "
                f"after the first event the target read"
            )
        print(f"cost: {status.get('cost')}")
        advanced = wait("a watermark", lambda: self.status(SQ, "q5").get("watermark"), 30) - mark
        print(f"event time ran at {advanced / 1000 / wall:.2f}x wall clock during the migration")
        if status["phase"] != "Succeeded":
            raise RuntimeError(f"unimico migration ended {status['phase']}: {status}")
        return wall, status

    def many(self) -> float:
        began = time.monotonic()
        for i in range(MANY):
            self.apply(SQ, query(f"many-{i}", self.ns, self.env, delete_snapshots=False))
        names = [f"many-{i}" for i in range(MANY)]
        wait(f"{MANY} queries Running", lambda: all(map(self.running, names)), 300, every=1.0)
        return time.monotonic() - began

    def teardown(self) -> None:
        """Every query while the operator runs: q5 (retention Delete) carries kopf's finalizer,
        and its delete handler removes its snapshots."""
        names = [item["metadata"]["name"] for item in self._queries()]
        for name in names:
            self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.ns, SQ, name)
        wait("every query deleted", lambda: not self._queries(), 120, every=0.5)

    def _queries(self) -> list[dict[str, Any]]:
        found = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.ns, SQ)
        return list(found["items"])


def _phase_in(status: dict[str, Any], phases: tuple[str, ...]) -> dict[str, Any] | None:
    return status if status.get("phase") in phases else None


def timeline(status: dict[str, Any]) -> str:
    """Seconds spent in each phase of a Migration's history."""
    history = status.get("phaseHistory", [])
    stamps = [datetime.fromisoformat(r["enteredAt"]) for r in history]
    spans = [
        f"{r['phase']}={(b - a).total_seconds():.1f}"
        for r, a, b in zip(history, stamps, stamps[1:], strict=False)
    ]
    return " ".join(spans)


def main() -> int:
    argparse.ArgumentParser(description=__doc__).parse_args()
    env = stack_env()
    bench = Bench(env)
    log = Path(tempfile.gettempdir()) / f"{bench.ns}-operator.log"
    operator = bench.setup(log)
    stop = threading.Event()
    feeder = threading.Thread(target=feed, args=(env["KAFKA_BOOTSTRAP"], f"{bench.ns}-bid", stop))
    try:
        ready = bench.ready()
        print(f"q5 applied → Running and reporting: {ready:.1f} s", flush=True)
        feeder.start()
        took, status = bench.unimico()
        print(f"unimico move of q5: Succeeded after {took:.1f} s ({timeline(status)})", flush=True)
        stop.set()
        feeder.join(60)
        many = bench.many()
        rss = rss_mb(operator.pid)
        print(f"{MANY} queries applied at once → all Running: {many:.1f} s", flush=True)
        bench.teardown()
    except Exception as error:
        print(f"bench-operator failed: {error}; operator log: {log}", file=sys.stderr)
        return 1
    finally:
        stop.set()
        operator.terminate()
        operator.wait(30)
        bench.core.delete_namespace(bench.ns)
    print(f"operator ready-s={ready:.1f} unimico-s={took:.1f} rss-mb={rss:.0f}")
    return 0 if ready < 10 and took < WINDOW_S + 5 and rss < 200 else 2


if __name__ == "__main__":
    sys.exit(main())
