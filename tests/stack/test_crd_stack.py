"""kubectl against the real API server: a CRD and a custom resource apply, schema validation
rejects a bad object."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from support.waiting import wait_for

from .helpers import Stack

pytestmark = pytest.mark.stack


def _crd(group: str) -> dict[str, object]:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["topic", "parallelism"],
                "properties": {
                    "topic": {"type": "string", "minLength": 1},
                    "parallelism": {"type": "integer", "minimum": 1, "maximum": 64},
                },
            }
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def test_kubectl_apply_crd_and_validation(stack: Stack, namespace: str, tmp_path: Path) -> None:
    group = f"t{uuid.uuid4().hex[:8]}.streamshift.dev"

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [stack.kubectl, "--kubeconfig", stack.kubeconfig, *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60)

    def apply(name: str, obj: dict[str, object]) -> subprocess.CompletedProcess[str]:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(obj))
        return kubectl("apply", "-n", namespace, "-f", str(path))

    crd = apply("crd", _crd(group))
    assert crd.returncode == 0, crd.stderr
    try:
        established = "condition=Established"
        wait = kubectl("wait", "--for", established, f"crd/widgets.{group}", "--timeout=30s")
        assert wait.returncode == 0, wait.stderr

        def widget(name: str, spec: dict[str, object]) -> dict[str, object]:
            return {
                "apiVersion": f"{group}/v1",
                "kind": "Widget",
                "metadata": {"name": name},
                "spec": spec,
            }

        def listed() -> bool:
            return kubectl("get", f"widgets.{group}", "-n", namespace).returncode == 0

        wait_for("the new resource served", listed, timeout=30)
        good = apply("good", widget("good", {"topic": "bids", "parallelism": 4}))
        assert good.returncode == 0, good.stderr
        got = kubectl("get", f"widgets.{group}", "good", "-n", namespace, "-o", "json")
        assert json.loads(got.stdout)["spec"] == {"topic": "bids", "parallelism": 4}

        bad = apply("bad", widget("bad", {"topic": "", "parallelism": 0}))
        assert bad.returncode != 0
        assert "spec.parallelism" in bad.stderr and "spec.topic" in bad.stderr
        wrong_type = apply("wrong", widget("wrong", {"topic": "bids", "parallelism": "many"}))
        assert wrong_type.returncode != 0 and "spec.parallelism" in wrong_type.stderr
        missing = kubectl("get", f"widgets.{group}", "bad", "-n", namespace)
        assert missing.returncode != 0 and "NotFound" in missing.stderr
    finally:
        kubectl("delete", "crd", f"widgets.{group}", "--wait=false")
