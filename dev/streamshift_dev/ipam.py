"""Loopback addresses for pods: each pod gets its own 127.0.x.y, so pods can share a port.

Linux answers on all of 127.0.0.0/8 without configuration. 127.0.0.0/24 is left to the stack
itself (the node's InternalIP is 127.0.0.1); pods get 127.0.1.1 to 127.0.255.254.
"""

from __future__ import annotations

from collections.abc import Iterator

NODE_IP = "127.0.0.1"


def _candidates() -> Iterator[str]:
    for x in range(1, 256):
        for y in range(1, 255):
            yield f"127.0.{x}.{y}"


class LoopbackIPs:
    """Hands out unused pod addresses, lowest first, and takes them back."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def reserve(self, ip: str) -> None:
        """Mark IP as taken (a pod that already has it, found at start-up)."""
        self._used.add(ip)

    def allocate(self) -> str:
        """The lowest free address; raises RuntimeError when all 65,000 are taken."""
        for ip in _candidates():
            if ip not in self._used:
                self._used.add(ip)
                return ip
        raise RuntimeError("no free loopback address for a pod")

    def release(self, ip: str) -> None:
        """Give IP back."""
        self._used.discard(ip)
