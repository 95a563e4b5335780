"""Kubernetes Events on a StreamQuery or Migration, posted through kopf's event queue.

The bodies here are the plain dicts the API returned (read afresh, not kopf's cached `Body`),
which kopf's poster accepts: it needs only apiVersion, kind and metadata (name, uid, namespace).
"""

from typing import Any

import kopf


def normal(body: dict[str, Any], reason: str, message: str) -> None:
    kopf.event(_ref(body), type="Normal", reason=reason, message=message)


def warning(body: dict[str, Any], reason: str, message: str) -> None:
    kopf.event(_ref(body), type="Warning", reason=reason, message=message)


def _ref(body: dict[str, Any]) -> Any:
    return {"apiVersion": body["apiVersion"], "kind": body["kind"], "metadata": body["metadata"]}
