"""The process node agent: a kubelet and scheduler for one Node whose pods are local processes.

It registers the Node, binds pending pods that ask for the default scheduler (and whose
nodeSelector the node satisfies), runs each bound pod through a PodRunner, patches pod status
when it changes, stops a pod's process group when the pod is deleted and then confirms the
deletion (grace period 0), as a kubelet does. Pod events come from a watch in a thread; all
state is handled in the main loop, so nothing needs a lock.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import time
from typing import Any

from kubernetes import client

from streamshift_dev import node
from streamshift_dev.ipam import NODE_IP, LoopbackIPs
from streamshift_dev.kube import MERGE_PATCH, Obj, core_api, get, pod_key
from streamshift_dev.podenv import container_env
from streamshift_dev.podwatch import LocalLookup, PodWatch
from streamshift_dev.runner import Paths, PodRunner

log = logging.getLogger("streamshift.node-agent")
TICK = 0.25
HEARTBEAT = 10.0
DEFAULT_SCHEDULERS = (None, "", "default-scheduler")
TERMINAL = ("Succeeded", "Failed")


class NodeAgent:
    """Runs the pods bound to node NAME until stopped by SIGTERM or SIGINT."""

    def __init__(self, kubeconfig: str, name: str, paths: Paths, path_prepend: str) -> None:
        self.core = core_api(kubeconfig)
        self.coordination = client.CoordinationV1Api(self.core.api_client)
        self.name = name
        self.paths = paths
        self.kubeconfig = kubeconfig
        self.path_prepend = path_prepend
        self.ips = LoopbackIPs()
        self.runners: dict[str, PodRunner] = {}  # by pod uid
        self.dying: list[PodRunner] = []  # pods gone from the API whose process still exits
        self.finished: set[str] = set()  # uids of pods that reached Succeeded or Failed
        self.reported: dict[str, Obj] = {}
        self.events: queue.Queue[tuple[str, Obj]] = queue.Queue()
        self.lookup = LocalLookup(self.core)
        self.stopping = False

    def run(self) -> None:
        """Register the node, then reconcile pods until a signal arrives."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        node.register(self.core, self.name)
        PodWatch(self.core, self.events).start()
        log.info("node %s registered; pod logs in %s", self.name, self.paths.logs)
        beat = 0.0
        while not self.stopping:
            self._drain_events()
            for uid in list(self.runners):
                self._tick(uid)
            self.dying = [r for r in self.dying if not r.stop(0)]
            if time.monotonic() - beat > HEARTBEAT:
                beat = time.monotonic()
                self._safe(node.heartbeat, self.core, self.coordination, self.name)
            time.sleep(TICK)
        self._shutdown()

    def _on_signal(self, signum: int, _frame: object) -> None:
        log.info("signal %d: stopping pods and exiting", signum)
        self.stopping = True

    def _shutdown(self) -> None:
        deadline = time.monotonic() + 15
        while any(not r.stop(10) for r in self.runners.values()) and time.monotonic() < deadline:
            time.sleep(TICK)

    def _safe(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # the API server may be restarting; the next tick retries
            log.warning("%s failed: %s", getattr(fn, "__name__", fn), exc)
            return None

    def _drain_events(self) -> None:
        batch: list[tuple[str, Obj]] = []
        while True:
            try:
                batch.append(self.events.get_nowait())
            except queue.Empty:
                break
        for kind, pod in batch:  # addresses already held, before any new pod takes one
            ip = get(pod, "status", "podIP")
            mine = kind != "SYNC" and get(pod, "spec", "nodeName") == self.name
            if mine and ip not in (None, NODE_IP):
                self.ips.reserve(ip)
        for kind, pod in batch:
            if kind == "SYNC":
                for uid in set(self.runners) - set(pod["uids"]):
                    self._on_pod("DELETED", self.runners[uid].pod)
            else:
                self._on_pod(kind, pod)

    def _on_pod(self, kind: str, pod: Obj) -> None:
        uid = str(get(pod, "metadata", "uid"))
        runner = self.runners.get(uid)
        if kind == "DELETED":
            self.finished.discard(uid)
            if runner is not None:
                runner.stop(0)
                self.dying.append(runner)
                self._forget(uid)
            return
        node_name = get(pod, "spec", "nodeName")
        if not node_name:
            self._maybe_bind(pod)
        elif node_name != self.name:
            return
        elif runner is not None:
            runner.pod = pod
        elif get(pod, "metadata", "deletionTimestamp"):
            self._safe(self._confirm_delete, pod)
        elif uid not in self.finished and get(pod, "status", "phase") not in TERMINAL:
            self._adopt(pod)

    def _maybe_bind(self, pod: Obj) -> None:
        if get(pod, "metadata", "deletionTimestamp"):
            return
        if get(pod, "spec", "schedulerName") not in DEFAULT_SCHEDULERS:
            return
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "streamshift.dev/process-node": "true",
        }
        selector = get(pod, "spec", "nodeSelector", default={})
        if any(labels.get(k) != v for k, v in selector.items()):
            return
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.name},
        }
        self._safe(
            lambda: self.core.create_namespaced_pod_binding(
                pod["metadata"]["name"], pod["metadata"]["namespace"], body, _preload_content=False
            )
        )

    def _adopt(self, pod: Obj) -> None:
        ip = get(pod, "status", "podIP")
        if ip and ip != NODE_IP:
            self.ips.reserve(ip)
        else:
            ip = self.ips.allocate()
        runner = PodRunner(pod, ip, self.paths)
        self.runners[pod["metadata"]["uid"]] = runner
        log.info("pod %s: ip %s, log %s", pod_key(pod), ip, self.paths.log(pod, runner.view.name))
        annotations = {"streamshift.dev/log": str(self.paths.log(pod, runner.view.name))}
        self._safe(
            lambda: self.core.patch_namespaced_pod(
                pod["metadata"]["name"],
                pod["metadata"]["namespace"],
                {"metadata": {"annotations": annotations}},
                _content_type=MERGE_PATCH,
            )
        )

    def _tick(self, uid: str) -> None:
        runner = self.runners[uid]
        pod = runner.pod
        if get(pod, "metadata", "deletionTimestamp"):
            grace = get(pod, "metadata", "deletionGracePeriodSeconds", default=30)
            if runner.stop(float(grace)) and self._safe(self._confirm_delete, pod) is not None:
                self._forget(uid)
            return
        runner.tick(self._env_for)
        status = runner.status()
        if status != self.reported.get(uid):
            meta = pod["metadata"]
            done = self._safe(
                lambda: self.core.patch_namespaced_pod_status(
                    meta["name"], meta["namespace"], {"status": status}, _content_type=MERGE_PATCH
                )
            )
            if done is not None:
                self.reported[uid] = status
        if runner.done and self.reported.get(uid) == status:
            log.info("pod %s: %s", pod_key(pod), runner.phase)
            self.finished.add(uid)
            self._forget(uid)

    def _confirm_delete(self, pod: Obj) -> bool:
        meta = pod["metadata"]
        try:
            self.core.delete_namespaced_pod(
                meta["name"],
                meta["namespace"],
                # with a body the API server ignores query parameters: the grace goes in the body
                body={"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}},
            )
        except client.ApiException as exc:
            if exc.status not in (404, 409):
                raise
            return True  # already gone, or a new pod of the same name
        log.info("pod %s: deleted", pod_key(pod))
        return True

    def _forget(self, uid: str) -> None:
        runner = self.runners.pop(uid)
        self.reported.pop(uid, None)
        self.ips.release(runner.ip)

    def _env_for(self, pod: Obj, container: Obj, ip: str) -> dict[str, str]:
        base = {
            k: v
            for k, v in os.environ.items()
            if k in ("HOME", "LANG", "LC_ALL", "TZ", "JAVA_HOME", "STREAMSHIFT_CACHE")
        }
        base["PATH"] = f"{self.path_prepend}:{os.environ.get('PATH', '/usr/bin:/bin')}"
        base["KUBECONFIG"] = self.kubeconfig
        base["HOSTNAME"] = pod["metadata"]["name"]
        base["PYTHONUNBUFFERED"] = "1"
        env = container_env(pod, container, self.lookup, ip, NODE_IP, base)
        env["STREAMSHIFT_POD_UID"] = pod["metadata"]["uid"]
        return env
