"""Client-mode Spark on the local API server: executor pods get an explicit command (the node
agent runs no image entrypoint) and the session takes the kubeconfig's credentials."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml
from streamshift_engine.spark.k8s_client import (
    ENTRYPOINT,
    api_server,
    client_config,
    executor_template,
)

KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [
        {
            "name": "other",
            "cluster": {"server": "https://127.0.0.9:1", "certificate-authority": "x"},
        },
        {
            "name": "local",
            "cluster": {"server": "https://127.0.0.1:16443", "certificate-authority": "/pki/ca"},
        },
    ],
    "users": [{"name": "admin", "user": {"client-certificate": "/pki/c", "client-key": "/pki/k"}}],
    "contexts": [{"name": "here", "context": {"cluster": "local", "user": "admin"}}],
    "current-context": "here",
}


def test_executor_template_runs_the_checked_in_entrypoint() -> None:
    container = executor_template()["spec"]["containers"][0]
    assert container["command"] == [str(ENTRYPOINT)]
    assert ENTRYPOINT.is_file() and os.access(ENTRYPOINT, os.X_OK)


def test_client_config_uses_the_current_context(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(KUBECONFIG))
    config = client_config(kubeconfig, "ns1", tmp_path / "template.yaml", executors=3)
    assert api_server(kubeconfig) == "https://127.0.0.1:16443"
    assert config["spark.submit.deployMode"] == "client"
    assert config["spark.kubernetes.namespace"] == "ns1"
    assert config["spark.kubernetes.authenticate.caCertFile"] == "/pki/ca"
    assert config["spark.kubernetes.authenticate.clientCertFile"] == "/pki/c"
    assert config["spark.kubernetes.authenticate.clientKeyFile"] == "/pki/k"
    assert config["spark.executor.instances"] == "3"
    assert config["spark.kubernetes.executor.podTemplateFile"] == str(tmp_path / "template.yaml")
    assert config["spark.driver.host"] == "127.0.0.1"


def test_entrypoint_refuses_other_roles(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(ENTRYPOINT), "driver"], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 2
    assert "only the executor role" in done.stderr
