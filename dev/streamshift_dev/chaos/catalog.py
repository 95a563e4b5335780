"""Every chaos scenario by name, in the order `make chaos` runs them (the issue's priority:
lost pods in each protocol's middle phase, the operator killed, poison records, broker restarts,
a MinIO outage, unreachable dependencies at create, then lost pods in every other phase), and
the choice of some by pattern.

Names: `lost-<side>-<protocol>` (the middle phase) and `lost-<side>-<protocol>-<phase>`,
`operator-killed-<protocol>-<phase>`, `broker-restart-<protocol>`."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable

from streamshift_dev.chaos import create_faults, migrations, stream_faults
from streamshift_dev.chaos.context import Context
from streamshift_dev.chaos.results import Outcome
from streamshift_dev.runtime_cases import PROTOCOLS

Scenario = Callable[[str, Context], Outcome]


def scenarios() -> dict[str, Scenario]:
    """Name to scenario, in running order."""
    found: dict[str, Scenario] = {}
    for protocol in PROTOCOLS:
        for side in ("origin", "target"):
            phase = migrations.middle(protocol, side)
            found[f"lost-{side}-{protocol}"] = migrations.lost_pod(protocol, side, phase)
    for protocol in PROTOCOLS:
        for phase in migrations.phases(protocol):
            killed = migrations.operator_killed(protocol, phase)
            found[f"operator-killed-{protocol}-{phase}"] = killed
    found["poison-records"] = stream_faults.poison
    found["broker-restart-mid-stream"] = stream_faults.broker_mid_stream
    for protocol in PROTOCOLS:
        found[f"broker-restart-{protocol}"] = migrations.broker_restarted(protocol)
    found["minio-outage-mid-snapshot"] = stream_faults.minio_outage
    found["kafka-unreachable-at-create"] = create_faults.unreachable("kafka")
    found["s3-unreachable-at-create"] = create_faults.unreachable("s3")
    for protocol in PROTOCOLS:
        for side in ("origin", "target"):
            for phase in migrations.lost_pod_phases(protocol, side):
                if phase != migrations.middle(protocol, side):
                    lost = migrations.lost_pod(protocol, side, phase)
                    found[f"lost-{side}-{protocol}-{phase}"] = lost
    return found


def chosen(patterns: list[str] | None) -> dict[str, Scenario]:
    """The scenarios whose names match any of the shell-style `patterns` (all when None)."""
    every = scenarios()
    if not patterns:
        return every
    return {n: s for n, s in every.items() if any(fnmatch.fnmatchcase(n, p) for p in patterns)}
