"""What every handler shares, kept in kopf's `memo`: the API clients and the worker image."""

import os
from dataclasses import dataclass

import aiohttp

from streamshift_operator.clients.control_api import ControlClient
from streamshift_operator.clients.kube import Kube

DEFAULT_WORKER_IMAGE = "streamshift/engine:0.1.0"


@dataclass
class Context:
    kube: Kube
    session: aiohttp.ClientSession
    image: str
    served: frozenset[str] = frozenset()
    """The namespaces the operator serves (the chart's `watchNamespaces`); empty for all."""

    @classmethod
    def start(cls) -> "Context":
        """Connect to the API server; the image from $STREAMSHIFT_WORKER_IMAGE, the namespaces
        served from $STREAMSHIFT_WATCH_NAMESPACES (comma-separated; unset for all)."""
        image = os.environ.get("STREAMSHIFT_WORKER_IMAGE", DEFAULT_WORKER_IMAGE)
        listed = os.environ.get("STREAMSHIFT_WATCH_NAMESPACES", "").split(",")
        served = frozenset(name.strip() for name in listed if name.strip())
        return cls(Kube.connect(), aiohttp.ClientSession(), image, served)

    def control(self, token: str) -> ControlClient:
        return ControlClient(self.session, token)
