"""`make demo-compare` (run by dev/demo.sh with the stack up, the CRDs installed and the operator
running): one Nexmark q5 StreamQuery fed at a steady rate, moved by each protocol in turn
(unimico, parallel-track, state-transfer, savepoint-restart, moving-state), each Migration with
`verify: true`, then a side-by-side table of what each Migration's status records: phase,
duration, output gap (the longest pause between results during the migration, and over a
stretch as long before it), state bytes moved, events processed twice and the verification. A
protocol the operator refuses because the worker runtime cannot drive it is listed as not
supported, with the operator's message. Before each migration the query runs undisturbed for
`FIRST_SETTLE_S`, then as long as the last migration's protocol work took (Preparing to
Finalizing, 5 to 30 s), so the stretch before it, against which its output gap is set, is
steady output.
Last, a PNG of output rate and latency around each migration (`compare_plot.py`) in the
repository's out/demo-compare.png, and where it was written.

Exit status 0 only when every supported protocol Succeeded with exact output.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from e2e.compare_plot import MARGIN_S, plot, read_output, span
from e2e.demo import arguments, follow, migration_of, start, wait

PROTOCOLS = ("unimico", "parallel-track", "state-transfer", "savepoint-restart", "moving-state")
FIRST_SETTLE_S = 20.0
PNG = Path(__file__).resolve().parents[1] / "out" / "demo-compare.png"
UNSUPPORTED = "does not offer yet"  # the operator's refusal of a protocol the runtime lacks
COLUMNS = (
    "protocol",
    "phase",
    "duration s",
    "gap s",
    "gap before s",
    "state bytes",
    "events twice",
    "verification",
)


def cells(protocol: str, status: dict[str, Any]) -> tuple[str, ...]:
    """One table row from a Migration's status ("-" where the status records nothing)."""
    if UNSUPPORTED in (status.get("message") or ""):
        return (protocol, "not supported", "-", "-", "-", "-", "-", "-")
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
        shown("outputGapBeforeSeconds"),
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
    args = arguments(__doc__)
    running = start(args)
    rows, statuses = [], []
    settle = FIRST_SETTLE_S
    for protocol in PROTOCOLS:
        time.sleep(settle)  # steady output before the migration
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
        began, ended = span(status) or (0.0, 0.0)
        settle = min(30.0, max(5.0, ended - began))
    time.sleep(MARGIN_S)  # the figure's margin after the last one
    output = read_output(
        args.kafka, f"{running.namespace}-q5-out", f"{running.namespace}-bid", "date_time"
    )
    running.finish()
    print("\nNexmark q5, one instance moved by each protocol (from each Migration's status):\n")
    print(table(rows))
    for protocol, status in zip(PROTOCOLS, statuses, strict=True):
        if UNSUPPORTED in (status.get("message") or ""):
            print(f"\n{protocol}: not supported: {status.get('message')}")
    figure = plot(output, list(zip(PROTOCOLS, statuses, strict=True)), PNG)
    print(f"\noutput rate and latency around each migration: {figure}")
    return 0 if all(passed(s) for s in statuses) else 1


if __name__ == "__main__":
    sys.exit(main())
