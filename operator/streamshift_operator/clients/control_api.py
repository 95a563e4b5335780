"""A small typed async client of the workers' control API (`streamshift worker`).

Every request carries the query's control token as a bearer token. `status` returns None when
the worker cannot be reached yet (a pod still starting), so observation never fails on one
slow worker; role calls raise `ControlError` with the worker's own message.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp

from streamshift_operator.resources.pods import CONTROL_PORT

TIMEOUT = aiohttp.ClientTimeout(total=3.0)


class ControlError(RuntimeError):
    """A worker refused a control request (`status` its HTTP status) or was unreachable (None)."""

    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Snapshot:
    key: str
    bytes: int
    created: datetime


@dataclass(frozen=True)
class WorkerReport:
    """What a worker's `/status` says about itself."""

    phase: str
    partitions: tuple[int, ...]
    offsets: dict[str, int]
    watermark: int | None
    throughput: float
    lag: int
    state_bytes: int
    counts: dict[str, int]
    last_snapshot: Snapshot | None
    roles: dict[str, dict[str, Any]]  # by migration: this worker's part in it (`Role.report`)
    load: dict[str, Any] = field(default_factory=dict)  # the autoscaler's inputs (`runtime/load`)

    def role(self, migration: str) -> dict[str, Any] | None:
        """This worker's part in `migration` (never one of an earlier migration's)."""
        return self.roles.get(migration)

    @classmethod
    def parse(cls, data: dict[str, Any]) -> "WorkerReport":
        last = data.get("last_snapshot")
        return cls(
            phase=str(data["phase"]),
            partitions=tuple(int(p) for p in data.get("partitions", ())),
            offsets={str(k): int(v) for k, v in data.get("offsets", {}).items()},
            watermark=None if data.get("watermark") is None else int(data["watermark"]),
            throughput=float(data.get("throughput", 0.0)),
            lag=int(data.get("lag", 0)),
            state_bytes=int(data.get("state_bytes", 0)),
            counts={str(k): int(v) for k, v in data.get("counts", {}).items()},
            last_snapshot=None
            if last is None
            else Snapshot(
                key=str(last["key"]),
                bytes=int(last["bytes"]),
                created=datetime.fromtimestamp(float(last["created"]), UTC),
            ),
            roles={str(k): dict(v) for k, v in (data.get("roles") or {}).items()},
            load=dict(data.get("load") or {}),
        )


class ControlClient:
    """Calls one query's workers by pod IP with that query's token."""

    def __init__(self, session: aiohttp.ClientSession, token: str) -> None:
        self.session = session
        self.headers = {"Authorization": f"Bearer {token}"}

    @staticmethod
    def url(pod_ip: str, path: str) -> str:
        return f"http://{pod_ip}:{CONTROL_PORT}{path}"

    async def status(self, pod_ip: str) -> WorkerReport | None:
        """The worker's report, or None while it cannot answer."""
        try:
            async with self.session.get(
                self.url(pod_ip, "/v1/status"), headers=self.headers, timeout=TIMEOUT
            ) as response:
                if response.status != 200:
                    return None
                return WorkerReport.parse(await response.json())
        except (aiohttp.ClientError, TimeoutError, ValueError, KeyError):
            return None

    async def call(self, pod_ip: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST a role request (idempotent on the worker, keyed by migration id)."""
        try:
            async with self.session.post(
                self.url(pod_ip, path), json=body, headers=self.headers, timeout=TIMEOUT
            ) as response:
                data = await response.json(content_type=None)
                if response.status >= 400:
                    raise ControlError(f"{path} on {pod_ip}: {data}", response.status)
                return dict(data)
        except (aiohttp.ClientError, TimeoutError) as error:
            raise ControlError(f"{path} on {pod_ip}: {error!r}", None) from None
