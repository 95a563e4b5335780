"""What a failed operator stack test leaves behind before its namespace is deleted: the output
topic read `read_committed`, the dead-letter topic with its headers (why each record was dropped),
every worker's `/v1/status` (phase, partitions, offsets, watermark, counters, hand-off), the
StreamQuery and Migration objects with their status, the namespace's Events, the worker pods'
logs and the operator's log records. Written to one file under
`~/.cache/streamshift/log/test-failures/` (CI keeps it with the logs)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from call_report import evidence_folder, read_topic
from operator_stack import MIG, SQ, TOKEN, Cluster, Stack
from streamshift_dev.workers import cache_dir
from streamshift_operator.resources.pods import CONTROL_PORT

LOG_LINES = 400  # the end of each pod's log


def worker_status(pod_ip: str) -> Any:
    request = urllib.request.Request(
        f"http://{pod_ip}:{CONTROL_PORT}/v1/status", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=3) as answer:
            return json.loads(answer.read())
    except OSError as error:
        return f"unreachable: {error}"


def pod_logs(namespace: str) -> dict[str, str]:
    found = sorted((cache_dir() / "log" / "pods").glob(f"{namespace}_*"))
    return {
        p.name: "\n".join(p.read_text(errors="replace").splitlines()[-LOG_LINES:]) for p in found
    }


def dump(
    cluster: Cluster, stack: Stack, namespace: str, test: str, failure: str, operator_log: str
) -> Path:
    """Write what the failed `test` left in `namespace`; the file's path."""
    sections: dict[str, Any] = {"test": test, "namespace": namespace, "failure": failure}
    pods = cluster.pods(namespace)
    sections["workers"] = {
        name: worker_status(pod.status.pod_ip) if pod.status.pod_ip else "no IP"
        for name, pod in sorted(pods.items())
    }
    sections["objects"] = {plural: cluster.list(plural, namespace) for plural in (SQ, MIG)}
    events = cluster.core.list_namespaced_event(namespace).items
    sections["events"] = [
        f"{e.last_timestamp} {e.involved_object.name} {e.reason}: {e.message}" for e in events
    ]
    sections["output"] = read_topic(stack.kafka, f"{namespace}-out")
    sections["dead_letters"] = read_topic(stack.kafka, f"{namespace}-out.dead")
    sections["pod_logs"] = pod_logs(namespace)
    sections["operator_log"] = operator_log
    path = evidence_folder() / f"{test.rsplit('::', 1)[-1]}-{namespace}.json"
    path.write_text(json.dumps(sections, indent=1, default=str))
    return path
