"""The `streamshift` console script: argparse subcommands, registered from their modules.

`streamshift run` runs a plan (a built-in name or a YAML/JSON file) in-process over a recorded
input (JSON lines) or over generated Nexmark events, and writes the results as JSON lines. Other
subcommands (the worker, verification) live in their own modules and are listed in
`COMMAND_MODULES`: each exposes `register(subparsers)`, adding its parser with a `handler`
default that takes the parsed arguments and returns the exit code.

Recorded input: one JSON object per line holding the record's fields, plus optionally `_input`
(the plan input it belongs to; default the plan's first input) and `_partition` (default 0).
Offsets count per (input, partition) in file order. Malformed records become dead letters.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import DeadLetter, Schema, decode_json
from streamshift_engine.plan import Plan, builtin, builtin_names, parse_plan
from streamshift_engine.runner import Instance

COMMAND_MODULES = ("streamshift_engine.runtime.worker", "streamshift_engine.spark.cli")
Handler = Callable[[argparse.Namespace], int]


def load_plan(name_or_file: str) -> Plan:
    """A built-in plan by name, or a plan document from a file."""
    path = Path(name_or_file)
    if path.is_file():
        return parse_plan(path.read_text())
    return builtin(name_or_file)


def recorded_batches(
    plan: Plan, lines: Iterable[bytes]
) -> tuple[dict[tuple[str, int], Batch], list[DeadLetter]]:
    """Decode JSON lines into one batch per (input, partition), with the dead letters."""
    default = plan.inputs[0].name
    grouped: dict[tuple[str, int], list[bytes]] = {}
    for line in lines:
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            grouped.setdefault((default, 0), []).append(line)
            continue
        if isinstance(record, dict):
            place = (str(record.pop("_input", default)), int(record.pop("_partition", 0)))
            line = orjson.dumps(record)
        else:
            place = (default, 0)
        grouped.setdefault(place, []).append(line)
    batches: dict[tuple[str, int], Batch] = {}
    letters: list[DeadLetter] = []
    for (name, partition), records in grouped.items():
        spec = plan.input(name)
        schema = Schema(name, tuple(spec.schema.items()), spec.time_field)  # type: ignore[arg-type]
        offsets = np.arange(len(records))
        batch, dead = decode_json(name, records, np.full(len(records), partition), offsets, schema)
        batches[(name, partition)] = batch
        letters += dead
    return batches, letters


def generated_batches(plan: Plan, count: int, seed: int) -> dict[tuple[str, int], Batch]:
    """Nexmark events `[0, count)` of the plan's inputs, one batch per (input, partition)."""
    from streamshift_engine.nexmark.generator import generate

    events = generate(seed, 0, count)
    batches = {}
    for spec in plan.inputs:
        batch = events[spec.name]
        for partition in np.unique(batch.partition).tolist():
            part = batch.take(batch.partition == partition)
            batches[(spec.name, partition)] = part.take(np.argsort(part.offset, kind="stable"))
    return batches


def run_command(arguments: argparse.Namespace) -> int:
    plan = load_plan(arguments.plan)
    letters: list[DeadLetter] = []
    if arguments.generate is not None:
        batches = generated_batches(plan, arguments.generate, arguments.seed)
    else:
        with open(arguments.input, "rb") as source:
            batches, letters = recorded_batches(plan, source)
    instance = Instance(plan, {partition for _, partition in batches})
    for spec in plan.inputs:
        for partition in {p for _, p in batches}:
            if (spec.name, partition) not in batches:
                instance.feed(spec.name, partition, Batch.empty(spec.name))
    written = 0
    with open(arguments.output, "wb") as sink:

        def write(results: Sequence[Any]) -> None:
            nonlocal written
            for result in results:
                for record in result.to_records():
                    sink.write(orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
                    written += 1

        size = arguments.batch_size
        longest = max((len(b) for b in batches.values()), default=0)
        for start in range(0, longest, size):
            for (name, partition), batch in sorted(batches.items()):
                instance.feed(name, partition, batch.take(slice(start, start + size)))
            write(instance.poll())
        write(instance.flush())
    letters += instance.dead_letters
    if arguments.dead_letters:
        with open(arguments.dead_letters, "wb") as dead:
            for letter in letters:
                entry = {
                    "source": letter.source,
                    "partition": letter.partition,
                    "offset": letter.offset,
                    "reason": letter.reason,
                    "raw": letter.raw.decode("utf-8", "replace"),
                }
                dead.write(orjson.dumps(entry) + b"\n")
    summary = {
        "plan": plan.name,
        "results": written,
        "dead_letters": len(letters),
        **instance.counters,
    }
    print(orjson.dumps(summary).decode(), file=sys.stderr)
    return 0


def register_run(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run", help="run a plan in-process over recorded or generated input"
    )
    parser.add_argument(
        "--plan", required=True, help=f"a plan file or one of: {' '.join(builtin_names())}"
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", help="recorded input, JSON lines")
    source.add_argument("--generate", type=int, metavar="N", help="generate N Nexmark events")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (with --generate)")
    parser.add_argument("--output", required=True, help="results, JSON lines")
    parser.add_argument("--dead-letters", help="write dead letters (JSON lines) here")
    parser.add_argument(
        "--batch-size", type=int, default=10_000, help="records per partition and poll"
    )
    parser.set_defaults(handler=run_command)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streamshift", description="streamshift stream engine")
    subparsers = parser.add_subparsers(dest="command", required=True)
    register_run(subparsers)
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            continue
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    handler: Handler = arguments.handler
    return handler(arguments)
