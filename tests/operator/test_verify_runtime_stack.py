"""CI's sample of `make verify-runtime`: one random migration per protocol carried out by real
worker pods, driven by the operator process, with out-of-order and late input; the output
topic read `read_committed` and the dead-letter topic equal the in-process reference. The five
cases run at once (as the bench runs them) to keep the test short. Then Nexmark q7 with late
input moved by each protocol and by `auto`, with `verify: true`: each Succeeded and verified
exact (none is refused: q7 moves by every protocol), its late events dead letters exactly as
without migration. And the comparison itself: it names what is missing, extra, differing or
duplicated, and dead letters either way."""

from __future__ import annotations

import random
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from streamshift_dev.runtime_cases import (
    PROTOCOLS,
    RuntimeCase,
    accepted,
    accepted_chain,
    refusal,
)
from streamshift_dev.runtime_run import (
    Observed,
    clean_up,
    dead_letter_problems,
    result_problems,
    run_case,
)
from streamshift_dev.stack_driver import Kube, OperatorProcess, Stack, ensure_bucket

LOGS = Path(tempfile.gettempdir())
"""Where each run's operator log goes (`verify-runtime-<run>-operator.log`)."""


def _namespace(case: RuntimeCase, run: str) -> str:
    return f"vrt-{run}-{case.slug}"


def _run(case: RuntimeCase, stack: Stack, run: str) -> Observed:
    namespace = _namespace(case, run)
    kube = Kube(stack)
    try:
        return run_case(case, kube, stack, namespace)
    finally:
        clean_up(kube, stack, namespace)


def _run_all(cases: list[RuntimeCase]) -> list[Observed]:
    """The cases at once, under one operator process watching their namespaces by name (made
    before it starts: see `OperatorProcess`)."""
    stack = Stack.running()
    kube = Kube(stack)
    kube.install_crds()
    ensure_bucket(stack)
    run = f"ci{time.time_ns() % 10**6}"
    log = LOGS / f"verify-runtime-{run}-operator.log"
    namespaces = [_namespace(c, run) for c in cases]
    for namespace in namespaces:
        kube.namespace(namespace)
    try:
        operator = OperatorProcess(stack, namespaces, log)
    except BaseException:
        for namespace in namespaces:
            clean_up(kube, stack, namespace)
        raise
    try:
        with ThreadPoolExecutor(len(cases)) as pool:
            outcomes = list(pool.map(lambda c: _run(c, stack, run), cases))
    finally:
        operator.stop()
    return outcomes


@pytest.mark.stack
def test_one_migration_per_protocol_on_real_workers_is_exact() -> None:
    cases = [accepted(protocol, 1)[0][0] for protocol in PROTOCOLS]
    for case, observed in zip(cases, _run_all(cases), strict=True):
        where = f"{case.protocol} seed {case.seed} ({case.describe()}; operator log: {LOGS})"
        assert observed.problems == [], where
        assert observed.phase == "Succeeded", where
        assert observed.verified is True, where
        assert observed.results > 0, where  # the reference has results to compare


@pytest.mark.stack
def test_q7_with_late_input_moves_exactly_by_each_protocol_and_auto() -> None:
    cases = [accepted(p, 1, family="nexmark-q7")[0][0] for p in (*PROTOCOLS, "auto")]
    outcomes = _run_all(cases[:3]) + _run_all(cases[3:])  # three at a time: six starved a query
    for case, observed in zip(cases, outcomes, strict=True):
        where = f"{case.protocol} seed {case.seed} ({case.describe()})"
        assert observed.problems == [], where
        assert (observed.phase, observed.verified) == ("Succeeded", True), where
        assert observed.results > 0 and observed.dead_letters > 0, where


@pytest.mark.stack
def test_a_random_chain_of_two_protocols_on_real_workers_is_exact() -> None:
    first, second = random.choice(PROTOCOLS), random.choice(PROTOCOLS)
    [case] = accepted_chain(first, second, 1)
    [observed] = _run_all([case])
    where = f"{case.label} seed {case.seed} ({case.describe()}; phases {observed.timeline})"
    assert observed.problems == [], where
    assert (observed.phase, observed.verified) == ("Succeeded", True), where
    assert observed.timeline.count("Succeeded") == 2, where  # both Migrations ran


def test_every_pair_of_protocols_has_chains_the_operator_accepts() -> None:
    for first in PROTOCOLS:
        for second in PROTOCOLS:
            chains = accepted_chain(first, second, 3)
            assert len(chains) == 3, (first, second)
            for case in chains:
                assert case.then is not None and case.then[0] == second
                target = case.then[1]
                assert target.get("parallelism") != case.parallelism_after, case.describe()
                assert refusal(case) is None
                assert case.new_plan is None  # plan changes are not chained


def test_the_comparison_names_each_kind_of_difference() -> None:
    expected = Counter(
        ['{"id": "a", "n": 1}', '{"id": "b", "n": 2}', '{"id": "c", "n": 3}', '{"id": "d", "n": 4}']
    )
    got = Counter(
        ['{"id": "a", "n": 1}', '{"id": "b", "n": 5}', '{"id": "d", "n": 4}', '{"id": "e", "n": 6}']
    )
    got['{"id": "d", "n": 4}'] += 1
    problems = result_problems(expected, got)
    assert [p.split(",")[0] for p in problems] == [
        "1 results missing",
        "1 extra results",
        "1 results differ",
        "1 duplicate results",
    ]
    assert '"id": "c"' in problems[0] and '"id": "e"' in problems[1]
    assert result_problems(expected, Counter(expected)) == []
    letter = ("bid", 0, 7, "late", b'{"ts": 1}')
    other = ("bid", 1, 3, "late", b'{"ts": 2}')
    assert dead_letter_problems(Counter([letter]), Counter([other])) == [
        "1 dead letters missing, e.g. late bid:0@7 b'{\"ts\": 1}'",
        "1 dead letters extra, e.g. late bid:1@3 b'{\"ts\": 2}'",
    ]
    assert dead_letter_problems(Counter([letter]), Counter([letter])) == []
