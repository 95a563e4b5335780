"""Kubernetes client helpers for the node agent: API objects as plain dicts, typed accessors."""

from __future__ import annotations

from typing import Any

from kubernetes import client, config, watch

Obj = dict[str, Any]
# the client's config and watch modules are untyped; use them as Any
_config: Any = config
_watch: Any = watch
MERGE_PATCH = "application/merge-patch+json"


def core_api(kubeconfig: str) -> Any:
    """A CoreV1Api on the cluster that KUBECONFIG names."""
    api_client = _config.new_client_from_config(config_file=kubeconfig)
    return client.CoreV1Api(api_client)


def new_watch() -> Any:
    """A kubernetes.watch.Watch."""
    return _watch.Watch()


def as_dict(api: Any, obj: Any) -> Obj:
    """A model object returned by the client, as the JSON-shaped dict the API server sent."""
    out: Obj = api.api_client.sanitize_for_serialization(obj)
    return out


def get(obj: Any, *path: str | int, default: Any = None) -> Any:
    """obj[path[0]][path[1]]..., or DEFAULT where a step is missing or None."""
    cur = obj
    for step in path:
        if isinstance(cur, dict) and isinstance(step, str):
            cur = cur.get(step)
        elif isinstance(cur, list) and isinstance(step, int) and -len(cur) <= step < len(cur):
            cur = cur[step]
        else:
            return default
        if cur is None:
            return default
    return cur


def pod_key(pod: Obj) -> str:
    """namespace/name of a pod, for logs."""
    return f"{get(pod, 'metadata', 'namespace')}/{get(pod, 'metadata', 'name')}"


def is_not_found(exc: BaseException) -> bool:
    """True for the client's 404 error."""
    return isinstance(exc, client.ApiException) and exc.status == 404
