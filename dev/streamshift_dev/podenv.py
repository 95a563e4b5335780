"""A pod container's environment, resolved as the kubelet does, and $(VAR) expansion.

Values come, in order, from envFrom (ConfigMaps and Secrets), then env: literal values with
$(VAR) references to earlier variables, ConfigMap and Secret keys, and downward API fields
(metadata.name, metadata.namespace, metadata.uid, metadata.labels['k'], metadata.annotations['k'],
spec.nodeName, spec.serviceAccountName, status.podIP, status.hostIP). The process's base
environment (PATH and the like) is given by the caller and overridden by the pod.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from typing import Any

from streamshift_dev.kube import Obj, get

# lookup(kind, namespace, name) -> the object's data as str -> str, or None when it does not exist
Lookup = Callable[[str, str, str], Mapping[str, str] | None]

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class EnvError(Exception):
    """A variable cannot be resolved (missing ConfigMap, Secret or key that is not optional)."""


def expand(text: str, env: Mapping[str, str]) -> str:
    """Replace $(VAR) by env[VAR] where VAR is defined; $$ stands for a literal $."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)

    return _REF.sub(sub, text)


def field_value(pod: Obj, path: str, pod_ip: str, host_ip: str) -> str:
    """The downward API value of fieldRef.fieldPath PATH for POD."""
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if m:
        return str(get(pod, "metadata", m.group(1), m.group(2), default=""))
    simple: dict[str, Any] = {
        "metadata.name": get(pod, "metadata", "name"),
        "metadata.namespace": get(pod, "metadata", "namespace"),
        "metadata.uid": get(pod, "metadata", "uid"),
        "spec.nodeName": get(pod, "spec", "nodeName"),
        "spec.serviceAccountName": get(pod, "spec", "serviceAccountName", default="default"),
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
        "status.hostIP": host_ip,
        "status.hostIPs": host_ip,
    }
    if path not in simple:
        raise EnvError(f"unsupported fieldRef {path!r}")
    return str(simple[path] or "")


def _source(lookup: Lookup, kind: str, namespace: str, ref: Obj) -> Mapping[str, str] | None:
    data = lookup(kind, namespace, str(ref.get("name", "")))
    if data is None and not ref.get("optional", False):
        raise EnvError(f"{kind} {namespace}/{ref.get('name')} not found")
    return data


def _value_from(pod: Obj, src: Obj, lookup: Lookup, pod_ip: str, host_ip: str) -> str | None:
    namespace = str(get(pod, "metadata", "namespace"))
    for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
        if key in src:
            ref = src[key]
            data = _source(lookup, kind, namespace, ref)
            if data is None or ref["key"] not in data:
                if ref.get("optional", False):
                    return None
                raise EnvError(f"{kind} {namespace}/{ref.get('name')} has no key {ref['key']!r}")
            return data[ref["key"]]
    if "fieldRef" in src:
        return field_value(pod, str(src["fieldRef"]["fieldPath"]), pod_ip, host_ip)
    if "resourceFieldRef" in src:
        res = src["resourceFieldRef"]["resource"]
        kind, _, name = str(res).partition(".")
        return str(get(pod, "spec", "containers", 0, "resources", kind, name, default="0"))
    raise EnvError(f"unsupported valueFrom {sorted(src)}")


def container_env(
    pod: Obj, container: Obj, lookup: Lookup, pod_ip: str, host_ip: str, base: Mapping[str, str]
) -> dict[str, str]:
    """The full environment of CONTAINER's process: BASE, then envFrom, then env."""
    env = dict(base)
    namespace = str(get(pod, "metadata", "namespace"))
    for item in container.get("envFrom") or []:
        prefix = str(item.get("prefix") or "")
        for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            if key in item:
                data = _source(lookup, kind, namespace, item[key]) or {}
                env.update({prefix + k: v for k, v in data.items()})
    for var in container.get("env") or []:
        if var.get("valueFrom"):
            value = _value_from(pod, var["valueFrom"], lookup, pod_ip, host_ip)
            if value is not None:
                env[var["name"]] = value
        else:
            env[var["name"]] = expand(str(var.get("value") or ""), env)
    return env


def secret_data(raw: Mapping[str, str] | None) -> dict[str, str]:
    """A Secret's base64 `data` decoded to text."""
    return {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in (raw or {}).items()}
