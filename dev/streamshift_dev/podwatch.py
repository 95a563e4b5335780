"""Pod events from the API server (a list, then a watch, relisted when the watch expires) and the
ConfigMap/Secret look-ups that pod environments need."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Mapping
from typing import Any

from kubernetes import client

from streamshift_dev.kube import Obj, as_dict, is_not_found, new_watch
from streamshift_dev.podenv import secret_data

log = logging.getLogger("streamshift.node-agent")


class PodWatch(threading.Thread):
    """Puts ("ADDED"|"MODIFIED"|"DELETED", pod) on a queue, and ("SYNC", {"uids": [...]}) after
    each full list so the consumer can drop pods deleted while the watch was down."""

    def __init__(self, core: Any, events: queue.Queue[tuple[str, Obj]]) -> None:
        super().__init__(name="pod-watch", daemon=True)
        self.core = core
        self.events = events

    def run(self) -> None:
        """List and watch forever."""
        while True:
            try:
                self._list_and_watch()
            except Exception as exc:
                log.warning("pod watch failed (%s); relisting in 1 s", exc)
                time.sleep(1)

    def _list_and_watch(self) -> None:
        listing = as_dict(self.core, self.core.list_pod_for_all_namespaces())
        uids = []
        for pod in listing.get("items") or []:
            uids.append(pod["metadata"]["uid"])
            self.events.put(("ADDED", pod))
        self.events.put(("SYNC", {"uids": uids}))
        rv = listing["metadata"]["resourceVersion"]
        w = new_watch()
        for event in w.stream(
            self.core.list_pod_for_all_namespaces,
            resource_version=rv,
            timeout_seconds=300,
            allow_watch_bookmarks=True,
        ):
            kind = event["type"]
            if kind == "ERROR":
                raise RuntimeError(str(event.get("raw_object")))
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self.events.put((kind, event["raw_object"]))


class LocalLookup:
    """lookup(kind, namespace, name): a ConfigMap's data or a Secret's decoded data, or None."""

    def __init__(self, core: Any) -> None:
        self.core = core

    def __call__(self, kind: str, namespace: str, name: str) -> Mapping[str, str] | None:
        """Read the object now (no cache: pods start rarely)."""
        try:
            if kind == "ConfigMap":
                cm = self.core.read_namespaced_config_map(name, namespace)
                return dict(cm.data or {})
            secret = self.core.read_namespaced_secret(name, namespace)
            data = secret_data(secret.data)
            data.update(secret.string_data or {})
            return data
        except client.ApiException as exc:
            if is_not_found(exc):
                return None
            raise
