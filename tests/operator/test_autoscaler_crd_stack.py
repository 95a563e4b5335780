"""The autoscaler's bounds on the real local API server: contradicting bounds, bounds above the
partitions and a utilization outside (0, 1] are refused with a message saying what to fix.

The generated StreamQuery CRD is installed under a group of its own, so the shared stack's CRDs
stay as the lead installed them. Needs `make up`.
"""

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException
from operator_stack import PARTITIONS, read_stack, stream_query
from streamshift_operator.crdgen.kinds import STREAM_QUERY, crd

pytestmark = pytest.mark.stack

Api = Any
VERSION = "v1alpha1"


@pytest.fixture(scope="module")
def group() -> Iterator[str]:
    """A StreamQuery CRD under a fresh group, Established, deleted afterwards."""
    loader: Api = kube_config
    api_client: Api = loader.new_client_from_config(config_file=read_stack().kubeconfig)
    extensions: Api = client.ApiextensionsV1Api(api_client)
    name = f"a{uuid.uuid4().hex[:8]}.streamshift.dev"
    body = crd(STREAM_QUERY)
    body["metadata"]["name"] = f"streamqueries.{name}"
    body["spec"]["group"] = name
    extensions.create_custom_resource_definition(body)
    try:
        deadline = time.monotonic() + 30
        while not _established(extensions, f"streamqueries.{name}"):
            assert time.monotonic() < deadline, "the CRD was not Established within 30 s"
            time.sleep(0.2)
        yield name
    finally:
        extensions.delete_custom_resource_definition(f"streamqueries.{name}")


def _established(extensions: Api, name: str) -> bool:
    conditions = extensions.read_custom_resource_definition(name).status.conditions or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


@pytest.fixture(scope="module")
def objects(group: str) -> Iterator[tuple[Api, str]]:
    loader: Api = kube_config
    api_client: Api = loader.new_client_from_config(config_file=read_stack().kubeconfig)
    namespace = f"autoscaler-crd-{uuid.uuid4().hex[:8]}"
    core: Api = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": namespace}})
    yield client.CustomObjectsApi(api_client), namespace
    core.delete_namespace(namespace)


def create(objects: tuple[Api, str], group: str, autoscaler: dict[str, Any]) -> dict[str, Any]:
    api, namespace = objects
    name = f"q{uuid.uuid4().hex[:6]}"
    body = stream_query(name, "nexmark-q5", name, read_stack(), autoscaler=autoscaler)
    body["apiVersion"] = f"{group}/{VERSION}"
    created: dict[str, Any] = api.create_namespaced_custom_object(
        group, VERSION, namespace, "streamqueries", body
    )
    return created


REFUSED = [
    (
        {"enabled": True, "minParallelism": 3, "maxParallelism": 2},
        "autoscaler.minParallelism must not exceed autoscaler.maxParallelism: lower the minimum "
        "or raise the maximum",
    ),
    (
        {"enabled": True, "maxParallelism": PARTITIONS + 1},
        "autoscaler.maxParallelism must not exceed the sources' partition count",
    ),
    (
        {"enabled": True, "minParallelism": PARTITIONS + 1},
        "autoscaler.minParallelism must not exceed the",
    ),
    ({"targetUtilization": 0}, "give a number above 0 and at most 1"),
    ({"targetUtilization": 1.5}, "give a number above 0 and at most 1"),
    ({"mode": "guess"}, 'supported values: "act", "recommend"'),
    ({"protocol": "teleport"}, 'supported values: "unimico"'),
]


@pytest.mark.parametrize(("autoscaler", "expected"), REFUSED, ids=[r[1][:40] for r in REFUSED])
def test_bad_autoscaler_bounds_are_refused_with_what_to_fix(
    group: str, objects: tuple[Api, str], autoscaler: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ApiException) as refused:
        create(objects, group, autoscaler)
    assert refused.value.status == 422
    body: Any = refused.value.body
    message = str(json.loads(body)["message"])
    assert expected in message, message


def test_valid_bounds_are_accepted_with_the_defaults(group: str, objects: tuple[Api, str]) -> None:
    bounds = {"enabled": True, "minParallelism": 2, "maxParallelism": PARTITIONS}
    created = create(objects, group, bounds)
    assert created["spec"]["autoscaler"] == {
        "enabled": True,
        "mode": "act",
        "minParallelism": 2,
        "maxParallelism": PARTITIONS,
        "targetUtilization": 0.7,
        "lagToleranceSeconds": 60,
        "metricWindowSeconds": 30,
        "stabilizationSeconds": 60,
        "scaleDownDelaySeconds": 300,
        "protocol": "auto",
    }
