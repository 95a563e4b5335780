"""The kind end-to-end run (e2e/kind/, `make e2e-kind`), as far as it can be checked without a
container engine: the script stops at once with a clear message when there is none; its images
are pinned; the chart renders with its values; the names its parts give one another agree (the
images run.sh builds, the in-cluster Kafka and MinIO addresses, demo.py's arguments)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_helm_chart import container, helm

REPO = Path(__file__).resolve().parents[2]
KIND = REPO / "e2e/kind"
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((KIND / name).read_text()) if d]


def containers(name: str) -> list[dict[str, Any]]:
    found = []
    for doc in documents(name):
        spec = doc.get("spec", {})
        pod = spec.get("template", {}).get("spec", {})
        found += pod.get("containers", [])
    return found


@pytest.mark.parametrize("path", ["/usr/bin:/bin", None])
def test_run_fails_fast_without_a_container_engine(path: str | None) -> None:
    """No `docker` on PATH, or a docker CLI whose daemon is not there (none runs here)."""
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    if path is not None:
        env["PATH"] = path
    began = time.monotonic()
    done = subprocess.run(
        ["bash", str(KIND / "run.sh")], capture_output=True, text=True, env=env, timeout=30
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("e2e-kind: no container engine: `docker")
    assert "kind runs its nodes as containers" in done.stderr
    assert done.stdout == "" and time.monotonic() - began < 10


def test_images_are_pinned_and_the_node_image_by_digest() -> None:
    script = (KIND / "run.sh").read_text()
    assert re.search(r"^KIND_VERSION=v\d+\.\d+\.\d+$", script, re.M)
    assert re.search(r'^NODE_IMAGE="kindest/node:v[\d.]+@sha256:[0-9a-f]{64}"$', script, re.M)
    for name in ("infra.yaml", "demo-job.yaml"):
        for found in containers(name):
            tag = found["image"].partition(":")[2]
            assert tag and tag != "latest", found["image"]


def test_chart_values_name_the_built_images_and_the_infra_services() -> None:
    script = (KIND / "run.sh").read_text()
    built = set(re.findall(r'-t "(streamshift/\w+):\$VERSION"', script))
    assert built == {"streamshift/operator", "streamshift/engine"}
    done = helm("lint", "--strict", str(REPO / "helm/streamshift"), "-f", str(KIND / "values.yaml"))
    assert done.returncode == 0, done.stdout
    done = helm("template", "rel", str(REPO / "helm/streamshift"), "-f", str(KIND / "values.yaml"))
    assert done.returncode == 0, done.stderr
    operator = container([d for d in yaml.safe_load_all(done.stdout) if d])
    assert operator["image"] == f"streamshift/operator:{VERSION}"
    assert operator["imagePullPolicy"] == "Never"
    env = {e["name"]: e.get("value") for e in operator["env"]}
    assert env["STREAMSHIFT_WORKER_IMAGE"] == f"streamshift/engine:{VERSION}"
    [demo] = containers("demo-job.yaml")
    assert demo["image"] == f"streamshift/engine:{VERSION}"
    values = yaml.safe_load((KIND / "values.yaml").read_text())
    [kafka] = [c for c in containers("infra.yaml") if c["name"] == "kafka"]
    advertised = {e["name"]: e["value"] for e in kafka["env"]}["KAFKA_ADVERTISED_LISTENERS"]
    assert advertised == f"PLAINTEXT://{values['kafka']['bootstrapServers']}"
    services = {d["metadata"]["name"]: d for d in documents("infra.yaml") if d["kind"] == "Service"}
    assert values["s3"]["endpoint"] == "http://minio.streamshift-infra.svc:9000"
    assert services["minio"]["spec"]["ports"][0]["port"] == 9000


def test_demo_job_arguments_are_what_demo_py_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(REPO / "e2e"))
    import demo

    [job] = containers("demo-job.yaml")
    assert job["command"] == ["python", "/e2e/demo/demo.py"]
    monkeypatch.setattr(sys, "argv", ["demo.py", *job["args"]])
    args = demo.arguments(demo.__doc__, "--protocol")
    assert args.protocol == "unimico"
    assert (
        args.kafka
        == yaml.safe_load((KIND / "values.yaml").read_text())["kafka"]["bootstrapServers"]
    )
    secret = next(d for d in documents("infra.yaml") if d["kind"] == "Secret")
    assert (args.s3_access_key, args.s3_secret_key) == (
        secret["stringData"]["user"],
        secret["stringData"]["password"],
    )
    script = (KIND / "run.sh").read_text()
    migration = demo.migration_of(args.protocol)
    assert f"-n {args.namespace} get migration {migration['metadata']['name']}" in script
    assert migration["spec"]["verify"] is True
