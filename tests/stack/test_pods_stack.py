"""The process node agent runs pods created through the real API server as local processes."""

from __future__ import annotations

import os
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from support.waiting import wait_for

from .helpers import Stack

pytestmark = pytest.mark.stack

SERVER = """
import http.server, os, pathlib
keys = ["POD_NAME", "POD_NAMESPACE", "POD_IP", "GREETING", "PASSWORD", "DERIVED"]
body = " ".join(os.environ[k] for k in keys).encode()
pathlib.Path(os.environ["MARKER"]).write_text(str(os.getpid()))
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(body)
print("serving on", os.environ["POD_IP"], flush=True)
http.server.HTTPServer((os.environ["POD_IP"], 8080), H).serve_forever()
"""


def _pod(name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "streamshift/none", "command": command}
    container.update(spec.pop("container", {}))
    return {"metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def _field(path: str) -> dict[str, Any]:
    return {"fieldRef": {"fieldPath": path}}


def _read(core: Any, ns: str, name: str) -> Any:
    return core.api_client.sanitize_for_serialization(core.read_namespaced_pod(name, ns))


def _gone(core: Any, ns: str, name: str) -> bool:
    try:
        core.read_namespaced_pod(name, ns)
    except client.ApiException as exc:
        return exc.status == 404
    return False


def _http_get(url: str) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as resp:
        return str(resp.read().decode())


def test_pod_runs_serves_on_its_ip_and_stops_when_deleted(
    stack: Stack, core: Any, namespace: str, tmp_path: Path
) -> None:
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "cfg"}, "data": {"greeting": "hello"}}
    )
    core.create_namespaced_secret(
        namespace, {"metadata": {"name": "sec"}, "stringData": {"pw": "s3cret"}}
    )
    env = [
        {"name": "POD_NAME", "valueFrom": _field("metadata.name")},
        {"name": "POD_NAMESPACE", "valueFrom": _field("metadata.namespace")},
        {"name": "POD_IP", "valueFrom": _field("status.podIP")},
        {"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "greeting"}}},
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "pw"}}},
        {"name": "DERIVED", "value": "$(POD_NAME)-derived"},
    ]
    probe = {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1}
    names = ["web-a", "web-b"]
    for name in names:
        marker = {"name": "MARKER", "value": str(tmp_path / name)}
        container = {
            "env": [*env, marker],
            "readinessProbe": probe,
            "ports": [{"name": "http", "containerPort": 8080}],
        }
        core.create_namespaced_pod(
            namespace, _pod(name, ["python", "-c", SERVER], container=container)
        )

    ips = {}
    for name in names:

        def ready(name: str = name) -> Any:
            pod = _read(core, namespace, name)
            conds = {c["type"]: c["status"] for c in pod["status"].get("conditions") or []}
            return pod if conds.get("Ready") == "True" else None

        pod = wait_for(f"pod {name} Ready", ready, timeout=60)
        assert pod["spec"]["nodeName"] == stack.node
        assert pod["status"]["phase"] == "Running"
        assert pod["status"]["hostIP"] == "127.0.0.1"
        ip = pod["status"]["podIP"]
        assert re.fullmatch(r"127\.0\.\d+\.\d+", ip) and not ip.startswith("127.0.0.")
        ips[name] = ip
        # both pods listen on port 8080, each on its own address
        body = _http_get(f"http://{ip}:8080/")
        assert body == f"{name} {namespace} {ip} hello s3cret {name}-derived"
        assert Path(pod["metadata"]["annotations"]["streamshift.dev/log"]).exists()
    assert len(set(ips.values())) == 2

    pid = int((tmp_path / "web-a").read_text())
    status = _read(core, namespace, "web-a")["status"]["containerStatuses"][0]
    assert status["containerID"] == f"process://{pid}"
    assert os.path.exists(f"/proc/{pid}")
    log = stack.pod_logs / f"{namespace}_web-a_main.log"
    assert f"serving on {ips['web-a']}" in log.read_text()

    core.delete_namespaced_pod("web-a", namespace)
    wait_for("pod web-a gone from the API", lambda: _gone(core, namespace, "web-a"), timeout=45)
    wait_for(f"process {pid} gone", lambda: not os.path.exists(f"/proc/{pid}"), timeout=10)
    # the other pod still serves
    assert _http_get(f"http://{ips['web-b']}:8080/").startswith("web-b ")


def test_restart_policies_and_exit_codes(stack: Stack, core: Any, namespace: str) -> None:
    core.create_namespaced_pod(
        namespace, _pod("fails", ["sh", "-c", "echo bye; exit 3"], restartPolicy="Never")
    )
    flaky = "if [ -f ran ]; then echo second; exit 0; fi; touch ran; echo first; exit 1"
    core.create_namespaced_pod(
        namespace, _pod("flaky", ["sh", "-c", flaky], restartPolicy="OnFailure")
    )

    def phase(name: str, want: str) -> Any:
        pod = _read(core, namespace, name)
        return pod if pod["status"].get("phase") == want else None

    failed = wait_for("pod fails Failed", lambda: phase("fails", "Failed"), timeout=30)
    term = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 3 and term["reason"] == "Error"
    assert "bye" in (stack.pod_logs / f"{namespace}_fails_main.log").read_text().splitlines()

    done = wait_for("pod flaky Succeeded", lambda: phase("flaky", "Succeeded"), timeout=30)
    cs = done["status"]["containerStatuses"][0]
    assert cs["restartCount"] == 1
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert cs["state"]["terminated"]["exitCode"] == 0
    lines = (stack.pod_logs / f"{namespace}_flaky_main.log").read_text().splitlines()
    assert [x for x in lines if x in ("first", "second")] == ["first", "second"]


def test_deployment_pods_run_and_owned_objects_are_collected(
    stack: Stack, core: Any, namespace: str
) -> None:
    apps = client.AppsV1Api(core.api_client)
    labels = {"app": "sleeper"}
    template = _pod("x", ["sleep", "600"])
    template["metadata"] = {"labels": labels}
    apps.create_namespaced_deployment(
        namespace,
        {
            "metadata": {"name": "sleeper"},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": template},
        },
    )

    def running() -> Any:
        pods = core.list_namespaced_pod(namespace, label_selector="app=sleeper").items
        ok = [p for p in pods if p.status.phase == "Running" and p.spec.node_name == stack.node]
        return ok if len(ok) == 2 else None

    pods = wait_for("2 deployment pods Running", running, timeout=60)
    pids = [int(p.status.container_statuses[0].container_id.split("//")[1]) for p in pods]
    assert all(os.path.exists(f"/proc/{pid}") for pid in pids)

    # garbage collection by owner reference (kube-controller-manager)
    parent = core.create_namespaced_config_map(namespace, {"metadata": {"name": "parent"}})
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "parent", "uid": parent.metadata.uid}
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "child", "ownerReferences": [owner]}}
    )
    apps.delete_namespaced_deployment("sleeper", namespace, propagation_policy="Foreground")
    core.delete_namespaced_config_map("parent", namespace)

    def child_gone() -> bool:
        names = [c.metadata.name for c in core.list_namespaced_config_map(namespace).items]
        return "child" not in names

    wait_for("owned ConfigMap collected", child_gone, timeout=60)
    wait_for("deployment pods deleted", lambda: not core.list_namespaced_pod(namespace).items, 60)
    wait_for("pod processes gone", lambda: not any(os.path.exists(f"/proc/{p}") for p in pids), 10)
