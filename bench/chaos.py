"""`make chaos`: faults a production query meets, injected on the local stack while its input
flows, each scenario's output and dead letters checked against the in-process reference
(issue 17, "Survives production"; docs/chaos.md).

Scenarios (`--list`; `--scenarios PATTERN ...` runs those matching a shell-style pattern): the
origin or the target pod deleted in each protocol's middle phase; the operator SIGKILLed in each
phase of a UniMiCo migration (and started again at once); poison records (oversize, malformed,
far-past and far-future event times); the query's broker restarted mid-stream and in each
protocol's middle phase (a private broker); its MinIO down during snapshots (a private MinIO);
Kafka and S3 unreachable at create. They run one after another, each in its own namespace,
under one operator process (`kopf run`) watching the run's namespaces. One line per scenario
as it finishes (`results.line`), then `chaos scenarios=N/M exact detection-max-s=S
recovery-max-s=S`: N of M exact or refused with a clear status.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from streamshift_dev.chaos.catalog import Scenario, chosen, scenarios
from streamshift_dev.chaos.context import Context, Operator
from streamshift_dev.chaos.results import Outcome, Verdict, line, summary
from streamshift_dev.stack_driver import Kube, Stack, delete_topics, ensure_bucket


def run_one(name: str, scenario: Scenario, ctx: Context) -> Outcome:
    """One scenario; an exception is its failure, not the run's."""
    began = time.monotonic()
    try:
        return scenario(name, ctx)
    except Exception as error:
        reason = f"the scenario could not run: {type(error).__name__}: {error}"[:500]
        return Outcome(name, Verdict.FAILED, None, None, reason, time.monotonic() - began)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenarios", nargs="+", metavar="PATTERN", help="run those matching")
    parser.add_argument("--list", action="store_true", help="print the scenarios' names")
    arguments = parser.parse_args()
    if arguments.list:
        print("\n".join(scenarios()))
        return 0
    selected = chosen(arguments.scenarios)
    if not selected:
        print(f"no scenario matches {arguments.scenarios}", file=sys.stderr)
        return 2
    stack = Stack.running()
    kube = Kube(stack)
    kube.install_crds()
    ensure_bucket(stack)
    run = f"{int(time.time()) % 100_000}"
    folder = Path(tempfile.gettempdir()) / f"chaos-{run}"
    folder.mkdir()
    print(f"{len(selected)} scenarios; operator logs and private servers in {folder}", flush=True)
    operator = Operator(stack, f"chaos-{run}-*", folder)
    outcomes = []
    began = time.monotonic()
    try:
        with ThreadPoolExecutor(2) as cleaner:
            for index, (name, scenario) in enumerate(selected.items()):
                ctx = Context(kube, stack, operator, folder, f"chaos-{run}-{index}", cleaner)
                outcome = run_one(name, scenario, ctx)
                outcomes.append(outcome)
                print(line(outcome), flush=True)
    finally:
        operator.stop()
        delete_topics(stack, f"chaos-{run}-")
    print(f"{len(outcomes)} scenarios in {time.monotonic() - began:.0f} s")
    print(summary(outcomes), flush=True)
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
