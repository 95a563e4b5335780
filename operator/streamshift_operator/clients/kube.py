"""The operator's calls to the Kubernetes API, async over the blocking `kubernetes` client.

Every write is idempotent: creating an object that exists is a no-op, deleting one that is gone
is a no-op. Calls run in a worker thread (`asyncio.to_thread`) so kopf's event loop never blocks.
"""

import asyncio
import base64
import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from streamshift_operator.models.common import GROUP, VERSION

T = TypeVar("T")
STREAM_QUERIES = "streamqueries"
MIGRATIONS = "migrations"


class Kube:
    """Core and custom-object APIs on one client configuration."""

    def __init__(self, api_client: Any) -> None:
        self.core: Any = client.CoreV1Api(api_client)
        self.custom: Any = client.CustomObjectsApi(api_client)

    @classmethod
    def connect(cls) -> "Kube":
        """In a pod: the service account; elsewhere: $KUBECONFIG or ~/.kube/config."""
        loader: Any = config
        try:
            loader.load_incluster_config()
            return cls(client.ApiClient())
        except loader.ConfigException:
            return cls(loader.new_client_from_config(config_file=os.environ.get("KUBECONFIG")))

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def ensure(self, body: dict[str, Any]) -> bool:
        """Create a Pod, ConfigMap or Service unless it exists; True when it was created."""
        create = {
            "Pod": self.core.create_namespaced_pod,
            "ConfigMap": self.core.create_namespaced_config_map,
            "Service": self.core.create_namespaced_service,
        }[body["kind"]]
        try:
            await self._call(create, body["metadata"]["namespace"], body)
        except ApiException as error:
            if error.status == 409:
                return False
            raise
        return True

    async def pods(self, namespace: str, labels: dict[str, str]) -> list[Any]:
        """The pods carrying all of `labels` (V1Pod objects)."""
        selector = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
        found = await self._call(self.core.list_namespaced_pod, namespace, label_selector=selector)
        return list(found.items)

    async def delete_pod(self, namespace: str, name: str, grace_seconds: int = 5) -> None:
        """Delete gracefully; a pod still Terminating after its grace period (its node stopped
        the process but never confirmed) is removed as `kubectl delete --force` would."""
        try:
            pod = await self._call(self.core.read_namespaced_pod, name, namespace)
            expired = pod.metadata.deletion_timestamp is not None and (
                pod.metadata.deletion_timestamp < datetime.now(UTC)
            )
            options = {
                "gracePeriodSeconds": 0 if expired else grace_seconds,
                "preconditions": {"uid": pod.metadata.uid},
            }
            await self._call(self.core.delete_namespaced_pod, name, namespace, body=options)
        except ApiException as error:
            if error.status not in (404, 409):
                raise

    async def secret_value(self, namespace: str, name: str, key: str) -> str | None:
        """One key of a Secret, decoded; None when the Secret or the key is missing."""
        try:
            secret = await self._call(self.core.read_namespaced_secret, name, namespace)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        raw = (secret.data or {}).get(key)
        return None if raw is None else base64.b64decode(raw).decode()

    async def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = await self._call(
                self.custom.get_namespaced_custom_object, GROUP, VERSION, namespace, plural, name
            )
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        return found

    async def list(self, plural: str, namespace: str) -> list[dict[str, Any]]:
        found = await self._call(
            self.custom.list_namespaced_custom_object, GROUP, VERSION, namespace, plural
        )
        return list(found["items"])

    async def create(self, plural: str, namespace: str, body: dict[str, Any]) -> bool:
        """Create a custom object unless one of that name exists; True when created."""
        try:
            await self._call(
                self.custom.create_namespaced_custom_object, GROUP, VERSION, namespace, plural, body
            )
        except ApiException as error:
            if error.status == 409:
                return False
            raise
        return True

    async def patch_spec(
        self, plural: str, namespace: str, name: str, spec: dict[str, Any]
    ) -> None:
        """Merge `spec` into the object (a hand-over records the placement the user now has)."""
        await self._call(
            self.custom.patch_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            plural,
            name,
            {"spec": spec},
        )

    async def patch_status(
        self,
        plural: str,
        namespace: str,
        name: str,
        status: dict[str, Any],
        resource_version: str | None = None,
    ) -> bool:
        """Merge `status` into the status subresource; with `resource_version`, only if the
        object is unchanged since that version (False on a conflict: observe again)."""
        body: dict[str, Any] = {"status": status}
        if resource_version is not None:
            body["metadata"] = {"resourceVersion": resource_version}
        try:
            await self._call(
                self.custom.patch_namespaced_custom_object_status,
                GROUP,
                VERSION,
                namespace,
                plural,
                name,
                body,
            )
        except ApiException as error:
            if error.status == 409:
                return False
            raise
        return True
