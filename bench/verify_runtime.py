"""`make verify-runtime CASES=N`: random migrations carried out by real workers, driven by the
operator, whose output must equal the in-process reference.

Per protocol, cases `runtime_cases.draw(protocol, seed)` for seeds 0, 1, ... until N are
accepted: a plan of the exactness cases' families with out-of-order and late input, and a move
or a rescale. A case the operator refuses before any pod starts (its own admission decision,
`runtime_cases.refusal`) is not counted for the protocol; the refusals are printed apart. Each
accepted case runs on the local stack (`make up`) in its own namespace (`runtime_run`): the
operator process (`kopf run`, one for every case unless `--operator-per-case`) places the
StreamQuery's worker pods, which the node agent runs as processes over Kafka and MinIO, and
carries out the Migration through the workers' control API while its input keeps arriving;
the output topic read `read_committed` and the dead-letter topic must equal the reference in
both directions. Cases run `--concurrency` at a time; one line per finished case with the
running tally, then the failures with the command that repeats each, and the final line
`runtime exact unimico=N/N parallel-track=N/N moving-state=N/N state-transfer=N/N
savepoint-restart=N/N`.

With `--chains`, every protocol followed by every protocol on the same query (`--cases` chains
per ordered pair, `runtime_cases.chained`: the first Migration a move or rescale, the second
moving or rescaling what the first left), each checked the same way; the final line is then
`runtime chains exact=N/N`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from streamshift_dev.runtime_cases import PROTOCOLS, RuntimeCase, accepted, accepted_chain
from streamshift_dev.runtime_run import Observed, clean_up, run_case
from streamshift_dev.stack_driver import Kube, OperatorProcess, Stack, delete_topics, ensure_bucket


def interleaved(
    protocols: list[str], count: int, seeds: list[int] | None
) -> tuple[list[RuntimeCase], dict[str, Counter[str]]]:
    """Per protocol its accepted cases, interleaved so every protocol's tally grows together;
    and each protocol's refusals by reason."""
    chosen, refusals = {}, {}
    for protocol in protocols:
        chosen[protocol], refusals[protocol] = accepted(protocol, count, seeds)
    longest = max((len(c) for c in chosen.values()), default=0)
    order = [c[i] for i in range(longest) for c in chosen.values() if i < len(c)]
    return order, refusals


def chains(protocols: list[str], count: int) -> list[RuntimeCase]:
    """`count` accepted chains per ordered pair of `protocols`, the pairs interleaved."""
    pairs = [accepted_chain(a, b, count) for a in protocols for b in protocols]
    return [pair[i] for i in range(count) for pair in pairs if i < len(pair)]


class Tally:
    """Exact and run cases per protocol, printed as cases finish."""

    def __init__(self, labels: list[str], total: int) -> None:
        self.exact: Counter[str] = Counter()
        self.run: Counter[str] = Counter()
        self.labels = labels
        self.total = total
        self.failures: list[tuple[RuntimeCase, Observed]] = []
        self.seconds: list[float] = []
        self.lock = threading.Lock()

    def add(self, case: RuntimeCase, observed: Observed) -> None:
        with self.lock:
            self.run[case.label] += 1
            self.exact[case.label] += observed.exact
            self.seconds.append(observed.seconds)
            if not observed.exact:
                self.failures.append((case, observed))
            verdict = "exact" if observed.exact else "NOT EXACT: " + "; ".join(observed.problems)
            spans = " ".join(f"{k} {v:.0f}" for k, v in observed.spans.items())
            done = sum(self.run.values())
            print(
                f"[{done}/{self.total}] {case.label} seed {case.seed} {case.describe()}, "
                f"{observed.results} results, {observed.dead_letters} dead letters, "
                f"{observed.tails} tails: "
                f"{verdict} ({observed.seconds:.0f} s: {spans}) | {self.line()}",
                flush=True,
            )

    def line(self) -> str:
        if not self.labels:  # chains: one tally over all pairs
            return f"chains={sum(self.exact.values())}/{sum(self.run.values())}"
        return " ".join(f"{p}={self.exact[p]}/{self.run[p]}" for p in self.labels)


def _namespace(run: str, case: RuntimeCase) -> str:
    return f"vrt-{run}-{case.slug}"


def check(
    case: RuntimeCase,
    stack: Stack,
    run: str,
    operator_per_case: bool,
    logs: Path,
    cleaner: ThreadPoolExecutor,
    keep_failed: bool = False,
    created: bool = False,
) -> Observed:
    """Run one case in its namespace (made here unless `created`); the namespace is removed by
    `cleaner` (not holding a case's slot), and its topics and snapshots too unless it failed and
    `keep_failed`."""
    namespace = _namespace(run, case)
    operator = None
    kube = Kube(stack)
    observed = Observed(problems=["the case did not end"])
    try:
        if not created:
            kube.namespace(namespace)
        if operator_per_case:
            operator = OperatorProcess(stack, namespace, logs / f"{namespace}-operator.log")
        observed = run_case(case, kube, stack, namespace)
    except Exception as error:  # one case's broken run is its failure, not the whole run's
        observed = Observed(problems=[f"the case could not run: {type(error).__name__}: {error}"])
    finally:
        if operator is not None:
            operator.stop()
        keep = keep_failed and not observed.exact
        cleaner.submit(clean_up, kube, stack, namespace, keep)
    return observed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=50, help="accepted cases per protocol")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=10,
        help="cases run at once (a case mostly waits on pods, Kafka and the API server: 10 at "
        "once keep two cores busy)",
    )
    parser.add_argument("--protocols", nargs="+", choices=PROTOCOLS, default=list(PROTOCOLS))
    parser.add_argument("--seeds", type=int, nargs="+", help="run exactly these seeds")
    parser.add_argument(
        "--operator-per-case",
        action="store_true",
        help="an operator process per namespace, started once the namespace exists (to measure; "
        "slower)",
    )
    parser.add_argument(
        "--chains",
        action="store_true",
        help="every protocol followed by every protocol (--cases chains per pair)",
    )
    parser.add_argument(
        "--keep-failed",
        action="store_true",
        help="keep a failed case's topics and snapshots (its namespace is removed) to look into",
    )
    arguments = parser.parse_args()
    stack = Stack.running()
    Kube(stack).install_crds()
    ensure_bucket(stack)
    if arguments.chains:
        cases, refusals = chains(arguments.protocols, arguments.cases), {}
    else:
        cases, refusals = interleaved(arguments.protocols, arguments.cases, arguments.seeds)
    run = f"{int(time.time()) % 100_000}"
    logs = Path(tempfile.gettempdir()) / f"verify-runtime-{run}"
    logs.mkdir()
    print(f"{len(cases)} cases, {arguments.concurrency} at a time; operator logs in {logs}")
    tally = Tally([] if arguments.chains else arguments.protocols, len(cases))
    shared, created = None, set()
    began = time.monotonic()
    try:
        if not arguments.operator_per_case:  # the first cases' namespaces before it starts
            for case in cases[: arguments.concurrency]:  # (`OperatorProcess`)
                Kube(stack).namespace(_namespace(run, case))
                created.add(case.slug)
            shared = OperatorProcess(stack, f"vrt-{run}-*", logs / "operator.log")
        with (
            ThreadPoolExecutor(arguments.concurrency) as cleaner,
            ThreadPoolExecutor(arguments.concurrency) as pool,
        ):
            futures = {
                pool.submit(
                    check,
                    c,
                    stack,
                    run,
                    arguments.operator_per_case,
                    logs,
                    cleaner,
                    arguments.keep_failed,
                    c.slug in created,
                ): c
                for c in cases
            }
            for future in as_completed(futures):
                tally.add(futures[future], future.result())
    finally:
        if shared is not None:
            shared.stop()
        if not arguments.keep_failed:  # any a worker wrote to again after its case's cleanup
            delete_topics(stack, f"vrt-{run}-")
    wall = time.monotonic() - began
    for protocol, reasons in refusals.items():
        for reason, count in reasons.most_common():
            print(f"refused {protocol} x{count}: {reason}")
    for case, observed in tally.failures:
        repeat = f"--protocols {case.protocol} --seeds {case.seed}"
        if case.then is not None:
            repeat = f"--chains --protocols {case.protocol} {case.then[0]} (pair seed {case.seed})"
        print(
            f"FAILED {case.label} seed {case.seed} ({case.describe()}; phases "
            f"{observed.timeline}): {'; '.join(observed.problems)}; repeat with "
            f"`python -m bench.verify_runtime {repeat}`"
        )
    mean = sum(tally.seconds) / max(len(tally.seconds), 1)
    print(
        f"{len(cases)} cases in {wall:.0f} s at concurrency {arguments.concurrency} "
        f"({mean:.0f} s per case on average, {wall / max(len(cases), 1):.1f} s of wall time each)"
    )
    if arguments.chains:
        print(f"runtime chains exact={sum(tally.exact.values())}/{sum(tally.run.values())}")
    else:
        summary = " ".join(f"{p}={tally.exact[p]}/{tally.run[p]}" for p in arguments.protocols)
        print(f"runtime exact {summary}")
    return 0 if not tally.failures else 1


if __name__ == "__main__":
    sys.exit(main())
