"""Pure tests of the node agent's pod environment resolution and status building (no stack)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from streamshift_dev.ipam import LoopbackIPs
from streamshift_dev.podenv import EnvError, container_env, expand
from streamshift_dev.podstatus import ContainerView, pod_status

POD = {
    "metadata": {"name": "w-0", "namespace": "jobs", "uid": "u-1", "labels": {"app": "q1"}},
    "spec": {"nodeName": "n1", "containers": [{"name": "main"}]},
}
OBJECTS: dict[tuple[str, str], Mapping[str, str]] = {
    ("ConfigMap", "plan"): {"query": "q1", "parallelism": "2"},
    ("Secret", "s3"): {"key": "k", "secret": "v"},
}


def lookup(kind: str, namespace: str, name: str) -> Mapping[str, str] | None:
    assert namespace == "jobs"
    return OBJECTS.get((kind, name))


def test_env_sources_in_kubelet_order() -> None:
    container = {
        "envFrom": [{"configMapRef": {"name": "plan"}, "prefix": "PLAN_"}],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s3", "key": "key"}}},
            {"name": "Q", "valueFrom": {"configMapKeyRef": {"name": "plan", "key": "query"}}},
            {
                "name": "OPT",
                "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "x", "optional": True}},
            },
            {"name": "URL", "value": "http://$(IP):8080/$(POD_NAME)/$$(IP)/$(UNSET)"},
            {"name": "PATH", "value": "/pod/bin"},
        ],
    }
    base = {"PATH": "/x", "HOME": "/h"}
    env = container_env(POD, container, lookup, "127.0.1.7", "127.0.0.1", base)
    assert env["PLAN_query"] == "q1" and env["PLAN_parallelism"] == "2"
    assert (env["POD_NAME"], env["NS"], env["IP"], env["APP"]) == ("w-0", "jobs", "127.0.1.7", "q1")
    assert (env["KEY"], env["Q"]) == ("k", "q1")
    assert "OPT" not in env
    assert env["URL"] == "http://127.0.1.7:8080/w-0/$(IP)/$(UNSET)"
    assert env["PATH"] == "/pod/bin" and env["HOME"] == "/h"


def test_missing_required_key_is_an_error() -> None:
    container = {"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s3", "key": "no"}}}]}
    with pytest.raises(EnvError, match="no key 'no'"):
        container_env(POD, container, lookup, "127.0.1.1", "127.0.0.1", {})
    with pytest.raises(EnvError, match="not found"):
        container_env(POD, {"envFrom": [{"secretRef": {"name": "gone"}}]}, lookup, "", "", {})


def test_expand_leaves_unknown_references() -> None:
    assert expand("$(A)-$(B)-$$", {"A": "1"}) == "1-$(B)-$"


def test_loopback_ips_are_unique_and_reused() -> None:
    ips = LoopbackIPs()
    ips.reserve("127.0.1.1")
    a, b = ips.allocate(), ips.allocate()
    assert (a, b) == ("127.0.1.2", "127.0.1.3")
    ips.release(a)
    assert ips.allocate() == a


def test_status_has_one_state_and_ready_conditions() -> None:
    view = ContainerView(name="main", image="img", restart_count=2, running_since="T1", ready=True)
    status = pod_status(POD, "Running", "127.0.1.9", "T0", view, "T5")
    cs = status["containerStatuses"][0]
    assert list(cs["state"]) == ["running"] and cs["restartCount"] == 2 and cs["ready"]
    conds = {c["type"]: c["status"] for c in status["conditions"]}
    assert conds == {
        "PodScheduled": "True",
        "Initialized": "True",
        "ContainersReady": "True",
        "Ready": "True",
    }
    assert status["podIP"] == "127.0.1.9" and status["hostIP"] == "127.0.0.1"
    done = ContainerView(name="main", image="img", terminated={"exitCode": 0})
    status = pod_status(POD, "Succeeded", "127.0.1.9", "T0", done, "T5")
    assert list(status["containerStatuses"][0]["state"]) == ["terminated"]
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "False"


def test_a_condition_that_changes_records_when_it_changed_not_the_pod_start() -> None:
    ready = ContainerView(name="main", image="img", running_since="T1", ready=True)
    first = pod_status(POD, "Running", "127.0.1.9", "T0", ready, "T1")
    assert {c["type"]: c["lastTransitionTime"] for c in first["conditions"]}["Ready"] == "T0"
    reported = {**POD, "status": first}
    busy = ContainerView(name="main", image="img", running_since="T1", ready=False)
    later = pod_status(reported, "Running", "127.0.1.9", "T0", busy, "T90")
    assert [c for c in later["conditions"] if c["type"] == "Ready"] == [
        {"type": "Ready", "status": "False", "lastTransitionTime": "T90",
         "reason": "ContainersNotReady"}
    ]  # fmt: skip
    still = pod_status({**POD, "status": later}, "Running", "127.0.1.9", "T0", busy, "T95")
    assert {c["type"]: c["lastTransitionTime"] for c in still["conditions"]}["Ready"] == "T90"
