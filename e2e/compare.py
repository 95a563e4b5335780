"""`make demo-compare` (run by dev/demo.sh with the stack up, the CRDs installed and the operator
running): one Nexmark q5 StreamQuery fed at a steady rate, moved by each protocol in turn
(unimico, parallel-track, state-transfer, savepoint-restart, moving-state), each Migration with
`verify: true`, then a side-by-side table of what each Migration's status records: phase,
duration, output gap, state bytes moved, events processed twice and the verification. A
protocol the operator refuses because the worker runtime cannot drive it is listed as not
supported, with the operator's message.

Exit status 0 only when every supported protocol Succeeded with exact output.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from demo import arguments, follow, migration_of, start, wait

PROTOCOLS = ("unimico", "parallel-track", "state-transfer", "savepoint-restart", "moving-state")
UNSUPPORTED = "does not offer yet"  # the operator's refusal of a protocol the runtime lacks
COLUMNS = (
    "protocol",
    "phase",
    "duration s",
    "gap s",
    "state bytes",
    "events twice",
    "verification",
)


def cells(protocol: str, status: dict[str, Any]) -> tuple[str, ...]:
    """One table row from a Migration's status ("-" where the status records nothing)."""
    if UNSUPPORTED in (status.get("message") or ""):
        return (protocol, "not supported", "-", "-", "-", "-", "-")
    cost = status.get("cost") or {}
    check = status.get("verification")
    verdict = (
        "not run"
        if not check
        else ("exact" if check.get("exact") else "NOT exact")
        + f" (missing {check.get('missing')}, duplicate {check.get('duplicate')})"
    )

    def shown(key: str) -> str:
        value = cost.get(key)
        return "-" if value is None else str(value)

    return (
        protocol,
        str(status.get("phase")),
        shown("durationSeconds"),
        shown("outputGapSeconds"),
        shown("stateBytesMoved"),
        shown("eventsProcessedTwice"),
        verdict,
    )


def table(rows: list[tuple[str, ...]]) -> str:
    """The rows under COLUMNS, each column as wide as its widest cell."""
    widths = [max(len(row[i]) for row in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    header = "  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True))
    rule = "  ".join("-" * w for w in widths)
    return "\n".join(line.rstrip() for line in [header, rule, *lines])


def passed(status: dict[str, Any]) -> bool:
    if UNSUPPORTED in (status.get("message") or ""):
        return True
    exact = (status.get("verification") or {}).get("exact")
    return status.get("phase") == "Succeeded" and bool(exact)


def main() -> int:
    running = start(arguments(__doc__))
    rows, statuses = [], []
    for protocol in PROTOCOLS:
        migration = migration_of(protocol)
        name = migration["metadata"]["name"]
        running.create("migrations", migration)
        print(f"\nMigration {name} applied (protocol {protocol}); following it:")
        status = follow(lambda name=name: running.status("migrations", name))
        statuses.append(status)
        rows.append(cells(protocol, status))
        wait(
            "q5 Running again",
            lambda: running.status("streamqueries", "q5").get("phase") == "Running",
            90,
        )
        time.sleep(5)  # a few windows of output between migrations
    running.finish()
    print("\nNexmark q5, one instance moved by each protocol (from each Migration's status):\n")
    print(table(rows))
    for protocol, status in zip(PROTOCOLS, statuses, strict=True):
        if UNSUPPORTED in (status.get("message") or ""):
            print(f"\n{protocol}: not supported: {status.get('message')}")
    return 0 if all(passed(s) for s in statuses) else 1


if __name__ == "__main__":
    sys.exit(main())
