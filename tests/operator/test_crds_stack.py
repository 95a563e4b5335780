"""The generated CRDs on the real local API server: invalid resources are refused with a
message that says what to fix; valid ones are accepted with the defaults filled in; the scale
subresource drives `spec.parallelism`. Needs `make up` (reads $STREAMSHIFT_CACHE/run/stack.env).
"""

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException
from operator_stack import apply_crds
from streamshift_operator.crdgen.kinds import KINDS, crd

pytestmark = pytest.mark.stack

# The client's generated types want model objects; plain dicts are what it sends either way.
Api = Any

GROUP, VERSION = "streamshift.io", "v1alpha1"
SQ, MIG = "streamqueries", "migrations"


def _stack_kubeconfig() -> str:
    cache = Path(os.environ.get("STREAMSHIFT_CACHE", Path.home() / ".cache/streamshift"))
    env_file = cache / "run/stack.env"
    assert env_file.exists(), f"{env_file} is missing: start the local stack with `make up`"
    pairs = (line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs if not key.startswith("#")}[
        "KUBECONFIG"
    ]


@pytest.fixture(scope="module")
def api() -> Api:
    loader: Api = kube_config
    api_client: Api = loader.new_client_from_config(config_file=_stack_kubeconfig())
    extensions: Api = client.ApiextensionsV1Api(api_client)
    apply_crds(extensions)
    for kind in KINDS:
        _wait_established(extensions, crd(kind)["metadata"]["name"])
    return api_client


def _wait_established(extensions: Api, name: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = extensions.read_custom_resource_definition(name).status
        if any(c.type == "Established" and c.status == "True" for c in status.conditions or []):
            return
        time.sleep(0.2)
    raise AssertionError(f"CRD {name} not Established within 30 s")


@pytest.fixture(scope="module")
def namespace(api: Api) -> Iterator[str]:
    name = f"crd-test-{uuid.uuid4().hex[:8]}"
    core: Api = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def _message(error: ApiException) -> str:
    body: Api = error.body
    return str(json.loads(body)["message"])


def stream_query(name: str = "q5", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "plan": {"builtin": "nexmark-q5"},
        "kafka": {"bootstrapServers": "127.0.0.1:9092"},
        "sources": [{"name": "bids", "topic": "bids", "partitions": 4}],
        "sinks": [{"name": "out", "topic": "q5-out"}],
        "snapshot": {
            "endpoint": "http://127.0.0.1:9000",
            "bucket": "snapshots",
            "credentials": {
                "accessKey": {"name": "s3", "key": "access"},
                "secretKey": {"name": "s3", "key": "secret"},
            },
        },
        "controlToken": {"name": "control", "key": "token"},
    }
    body.update(spec)
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "StreamQuery",
        "metadata": {"name": name},
        "spec": {k: v for k, v in body.items() if v is not None},
    }


def migration(name: str = "m1", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"queryRef": {"name": "q5"}, "target": {"parallelism": 2}}
    body.update(spec)
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Migration",
        "metadata": {"name": name},
        "spec": {k: v for k, v in body.items() if v is not None},
    }


REFUSED = [
    ("parallelism 0", SQ, stream_query(parallelism=0), "should be greater than or equal to 1"),
    (
        "parallelism above partitions",
        SQ,
        stream_query(parallelism=5),
        "parallelism must not exceed the sources' partition count",
    ),
    (
        "plan with builtin and inline",
        SQ,
        stream_query(plan={"builtin": "nexmark-q5", "inline": {"name": "x"}}),
        "set exactly one of plan.builtin",
    ),
    ("plan empty", SQ, stream_query(plan={}), "set exactly one of plan.builtin"),
    (
        "sources not co-partitioned",
        SQ,
        stream_query(
            sources=[
                {"name": "a", "topic": "a", "partitions": 4},
                {"name": "b", "topic": "b", "partitions": 2},
            ]
        ),
        "same number of partitions",
    ),
    ("no sources", SQ, stream_query(sources=[]), "should have at least 1 items"),
    ("no control token", SQ, stream_query(controlToken=None), "controlToken: Required value"),
    ("name too long for pod names", SQ, stream_query(name="q" * 41), "at most 40 characters"),
    (
        "unknown retention policy",
        SQ,
        stream_query(
            snapshot={**stream_query()["spec"]["snapshot"], "retention": {"onDelete": "Forever"}}
        ),
        'supported values: "Retain", "Delete"',
    ),
    ("unknown protocol", MIG, migration(protocol="teleport"), 'supported values: "unimico"'),
    ("missing queryRef", MIG, migration(queryRef=None), "queryRef: Required value"),
    (
        "conflicting target fields",
        MIG,
        migration(target={"parallelism": 2, "plan": {"builtin": "nexmark-q8"}}),
        "set exactly one of target.parallelism",
    ),
    ("empty target", MIG, migration(target={}), "set exactly one of target.parallelism"),
    (
        "target parallelism 0",
        MIG,
        migration(target={"parallelism": 0}),
        "should be greater than or equal to 1",
    ),
    (
        "unimico with a plan change",
        MIG,
        migration(protocol="unimico", target={"plan": {"builtin": "nexmark-q8"}}),
        "unimico hands the same plan over at a window boundary and cannot change the plan",
    ),
]


@pytest.mark.parametrize(
    ("case", "plural", "body", "expected"), REFUSED, ids=[c[0] for c in REFUSED]
)
def test_invalid_resources_are_refused_with_what_to_fix(
    api: Api,
    namespace: str,
    case: str,
    plural: str,
    body: dict[str, Any],
    expected: str,
) -> None:
    objects: Api = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as refused:
        objects.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, body)
    assert refused.value.status == 422, case
    message = _message(refused.value)
    assert expected in message, f"{case}: {message}"


def test_valid_resources_get_defaults_and_scale_drives_parallelism(
    api: Api, namespace: str
) -> None:
    objects: Api = client.CustomObjectsApi(api)
    query = objects.create_namespaced_custom_object(GROUP, VERSION, namespace, SQ, stream_query())
    spec = query["spec"]
    assert spec["parallelism"] == 1
    assert spec["sinks"] == [{"name": "out", "topic": "q5-out", "partitions": 1}]
    assert spec["snapshot"]["intervalSeconds"] == 30
    assert spec["snapshot"]["retention"] == {"onDelete": "Retain", "keepLast": 3}
    assert spec["resources"]["requests"] == {"cpu": "250m", "memory": "256Mi"}

    objects.patch_namespaced_custom_object_scale(
        GROUP, VERSION, namespace, SQ, "q5", {"spec": {"replicas": 3}}
    )
    scaled = objects.get_namespaced_custom_object(GROUP, VERSION, namespace, SQ, "q5")
    assert scaled["spec"]["parallelism"] == 3
    with pytest.raises(ApiException) as too_many:
        objects.patch_namespaced_custom_object_scale(
            GROUP, VERSION, namespace, SQ, "q5", {"spec": {"replicas": 9}}
        )
    assert "parallelism must not exceed" in _message(too_many.value)

    created = objects.create_namespaced_custom_object(GROUP, VERSION, namespace, MIG, migration())
    assert created["spec"]["protocol"] == "auto"
    assert created["spec"]["verify"] is False
    assert created["spec"]["timeouts"] == {
        "preparingSeconds": 120,
        "protocolStepSeconds": 600,
        "finalizingSeconds": 120,
    }
    changed = {"spec": {"target": {"parallelism": 3}}}
    with pytest.raises(ApiException) as immutable:
        objects.patch_namespaced_custom_object(GROUP, VERSION, namespace, MIG, "m1", changed)
    assert "cannot change once created" in _message(immutable.value)
