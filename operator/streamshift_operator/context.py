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

    @classmethod
    def start(cls) -> "Context":
        """Connect to the API server; the image from $STREAMSHIFT_WORKER_IMAGE."""
        image = os.environ.get("STREAMSHIFT_WORKER_IMAGE", DEFAULT_WORKER_IMAGE)
        return cls(Kube.connect(), aiohttp.ClientSession(), image)

    def control(self, token: str) -> ControlClient:
        return ControlClient(self.session, token)
