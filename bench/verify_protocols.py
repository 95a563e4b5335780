"""Check at scale that every protocol's output with migration equals the output without.

Cases are drawn until every protocol has accepted `--cases` of them (refused ones do not count).
Case `i` is `migration.cases.make_case(ALL_FAMILIES[i % len(ALL_FAMILIES)], i)`: the seed queries
Q1, Q2, Q3 and SMQ, Nexmark q5, q7 and q8, random window plans (time and tuple based, tumbling and
sliding, joins and aggregates, sessions, unions, sliding window joins, joins of 3 and 4 inputs),
plan changes and rescales, each with its own input, migration start step and message delays,
run on the engine's `Instance`; half of them (or all, or none: `--disorder`) with out-of-order
and late input (`cases.make_case`). Each case runs once without migration and once
per protocol that accepts its plan, and must give the same results and the same dead letters
(`run.compare_outcomes`); a protocol that refuses a plan is counted apart, with its reason.
Cases where only one side emitted (a start after the last result) are exact but hand nothing
over; the per-protocol line says how many cases had output from both origin and target.
Every protocol runs the role classes the worker runs (`migration/*_roles.py`, driven by the
in-process `Group`). Prints one line per protocol (with how many of its exact cases were
disordered), the refusals, and the summary line
`protocols exact unimico=N/N parallel-track=N/N ...` where N counts the accepted cases.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from streamshift_engine.migration.cases import ALL_FAMILIES, Case, make_case
from streamshift_engine.migration.catalog import PROTOCOL_CLASSES
from streamshift_engine.migration.run import compare_outcomes

MAX_DRAWS_PER_CASE = 3
"""A bound on the cases drawn, per accepted case wanted: no protocol refuses two thirds."""


@dataclass
class Tally:
    """One protocol's record over the cases."""

    exact: int = 0
    accepted: int = 0
    disordered: int = 0
    disordered_exact: int = 0
    both_emitted: int = 0
    refusals: Counter[str] = field(default_factory=Counter)
    families: Counter[str] = field(default_factory=Counter)


def check_case(case: Case, tallies: dict[str, Tally]) -> None:
    reference = case.without_migration()
    for protocol in PROTOCOL_CLASSES:
        tally = tallies[protocol.name]
        reason = case.refusal(protocol)
        if reason is not None:
            tally.refusals[reason.split(": ", 1)[1]] += 1
            continue
        tally.accepted += 1
        tally.disordered += case.disordered
        tally.families[case.family] += 1
        outcome = case.migrated_by(protocol)
        problems = compare_outcomes(reference, outcome)
        tally.exact += not problems
        tally.disordered_exact += case.disordered and not problems
        tally.both_emitted += {e.owner for e in outcome.emitted} == {"origin", "target"}
        if problems:
            order = "disordered" if case.disordered else "in order"
            where = f"{case.family} seed {case.seed} start {case.start_step} {order}"
            print(f"  {protocol.name} {where}: {'; '.join(problems)}")


def progress(drawn: int, tallies: dict[str, Tally], wanted: int) -> None:
    """One status line on stderr, rewritten in place while cases run (a terminal only)."""
    if not sys.stderr.isatty():
        return
    counts = " ".join(f"{p.name}={tallies[p.name].accepted}" for p in PROTOCOL_CLASSES)
    print(f"\r{drawn} cases drawn, accepted of {wanted}: {counts}", end="", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--cases",
        type=int,
        default=500,
        help="draw cases until every protocol has accepted at least this many",
    )
    parser.add_argument(
        "--disorder",
        choices=("mixed", "always", "never"),
        default="mixed",
        help="out-of-order and late input: in the cases that draw it (half), in all, in none",
    )
    arguments = parser.parse_args()
    cases = arguments.cases
    disordered = {"mixed": None, "always": True, "never": False}[arguments.disorder]
    tallies: dict[str, Tally] = defaultdict(Tally)
    started = time.perf_counter()
    index = 0
    while min(tallies[p.name].accepted for p in PROTOCOL_CLASSES) < cases:
        if index >= MAX_DRAWS_PER_CASE * cases:
            raise SystemExit(f"{index} cases drawn, a protocol accepted fewer than {cases}")
        family = ALL_FAMILIES[index % len(ALL_FAMILIES)]
        check_case(make_case(family, index, disordered), tallies)
        index += 1
        progress(index, tallies, cases)
    seconds = time.perf_counter() - started
    for protocol in PROTOCOL_CLASSES:
        tally = tallies[protocol.name]
        plans = ", ".join(f"{name} {count}" for name, count in sorted(tally.families.items()))
        refused = sum(tally.refusals.values())
        print(
            f"{protocol.name}: {tally.exact}/{tally.accepted} exact "
            f"(disordered {tally.disordered_exact}/{tally.disordered}), {refused} refused, "
            f"{tally.both_emitted} with output from both origin and target (accepted: {plans})"
        )
    for protocol in PROTOCOL_CLASSES:
        for reason, count in sorted(tallies[protocol.name].refusals.items()):
            print(f"refused {protocol.name} x{count}: {reason}")
    print(f"{index} cases in {seconds:.0f} s")
    summary = " ".join(
        f"{p.name}={tallies[p.name].exact}/{tallies[p.name].accepted}" for p in PROTOCOL_CLASSES
    )
    print(f"protocols exact {summary}")


if __name__ == "__main__":
    main()
