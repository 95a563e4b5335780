"""`make bench-engine`: engine events/s per core, JSON and columnar input, against decode.

One process pinned to one core. The input (Nexmark events; for the seed queries Q1 and Q3 the
seed streams `S` and `T`) is generated and encoded in the wire format first (JSON: one record
per event; columnar: one Arrow IPC record per partition and poll, a poll being about `--batch`
records of the query's inputs); the timed loop decodes each poll partition by partition as the
worker does (only the fields the plan reads, `runtime.projection`), feeds an engine `Instance`
(merge order and watermark as in a worker; late records go to its dead letters), polls it and
encodes the results in the same format (JSON: one record per result, as one Arrow binary array,
the buffer a producer sends from; building a Python `bytes` per result, as the Kafka sink does
for its client, is not counted). The queries whose joins interleave their inputs (q3, seed Q1,
seed Q3) run again with the finer polls of `--slices` (5,000 records: a worker's poll), so a
rate that falls with the slicing shows: once `held` as a worker runs them (the polls' records
held undecoded until `runner.MINI_BATCH` is due, 32,768 records or 100 ms, then decoded and fed
in one call per partition and the pipeline run; `runtime.loop`) and once `unheld` (every poll
decoded, fed and run), on rows side by side.
`--hold` holds the `--batch` rows too (their polls are larger than the hold: no change).
Every case runs on ordered input and on disordered input, printed side by side: events shuffled
as the reference generator's `outOfOrderGroupSize` does (`nexmark.arrival`, groups spanning
`DISORDER_MS` of event time; the seed streams shuffled alike), 1% of them late by `LATE_MS`, and
the inputs' watermarks allowing `DISORDER_MS` (the late ones go to the dead letters).
`--decode-only` prints instead, per query, the rate of the engine's JSON decode alone and of
`orjson.loads` alone over the same records: the bound of a query's JSON rate.
Rates count the events the query reads (bids; persons and auctions for q3 and q8; auctions and
bids for q4 and q6; `S` and `T`). The decode limit is the rate at which `orjson.loads` alone
gets through the same records. Times are the process's CPU time (user + system) on its one
core, not wall time: the machine is shared, and a rate per core should not count the time other
processes hold the core. Each query runs `--repeat` times, its decode limit measured before each
run, and the best of each is kept (as `timeit` does); the median over the runs of each run's
rate over the limit measured just before it is printed too. CPU time still grows when other
processes share the core's caches, and so do both sides of a ratio; a pair, measured seconds
apart, sees about the same load. Beside each rate is the rate of the engine of git revision
`--against` (`BASELINE`) on the same cases, measured first in the same invocation (its joins
only with `--against-joins`: it took their input run by run, minutes per case). With
`--alternate N` the two engines run case by case instead, in turns: the polls of a case are
encoded once, then N times a process of the `--against` engine and one of this engine each run
them `--repeat` times, the best rate of each side kept, so both see the load of the same minute
(run first, minutes apart, the baseline's rows moved by -17% to +14% against this engine's on
code paths neither changed; their result and late counts are printed side by side). Peak memory of
10M events of q5 and q8 is measured in a fresh subprocess each (`VmHWM`), fed from the
generator poll by poll, so it shows the state, which the windows must bound.
"""

from __future__ import annotations

import argparse
import gc
import glob
import importlib.util
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import (
    decode_columnar,
    decode_json,
    encode_columnar,
    encode_json,
    encode_results_columnar,
    encode_results_records,
)
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.nexmark.model import BID
from streamshift_engine.plan.builtin import builtin
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.nexmark_queries import nexmark_plan
from streamshift_engine.plan.parse import parse_plan
from streamshift_engine.runner import Instance
from streamshift_engine.runtime.projection import input_schemas, projected
from streamshift_engine.spark.seed_streams import STREAMS, SeedStreamConfig, seed_streams

if TYPE_CHECKING:  # not imported at run time: an `--against` engine may lack them
    from streamshift_engine.events.wire import Schema
    from streamshift_engine.runner import Hold

SEED = 2024
CONFIG = GeneratorConfig()
DISORDER_MS = 100
"""Disordered input: events arrive shuffled within groups spanning this much event time (the
reference generator's `outOfOrderGroupSize`), and the inputs' watermarks allow it
(`out_of_orderness`)."""
LATE_PER_MILLION = 10_000
LATE_MS = 1_000
"""Disordered input: 1% of the events arrive this much after their slot, behind the bound: late
(dead letters)."""
ORDERS = ("ordered", "disordered")
QUERIES = ("q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "smq", "seed-q1", "seed-q3")
BASELINE = "e0c894f"
"""The main commit before joins took merged batches: its figures are the ones no query may fall
below."""
JOINS = ("q3", "seed-q1", "seed-q3")
"""Queries whose joins interleave their inputs: also run at the finer slices of `--slices`."""
SEED_STREAMS = SeedStreamConfig(keys=1_600)
"""The seed streams with about one `S` partner per `T` tuple in Q1's 10 s range (the default
ten make five results per event, and the rate then measures mostly the results' encoding)."""
FLINK_PER_CORE = {"q5": 22_100, "q7": 12_300, "q8": 146_000}


def plan_of(query: str) -> Plan:
    """The Nexmark plan, a seed query (`seed-q1`: Q1 of seed 000 (Pham et al., UniMiCo)), or SMQ
    (seed 003 (Bartnik et al., On-the-fly Reconfiguration), 6.3.1) as a per-auction counter over
    bids."""
    if query.startswith("seed-"):
        return builtin(query.removeprefix("seed-"))
    if query != "smq":
        return nexmark_plan(f"nexmark-{query}")
    counter = {
        "id": "counter",
        "type": "stateful_map",
        "input": "bid",
        "params": {"key": "auction"},
    }
    inputs = [
        {
            "name": "bid",
            "topic": "nexmark-bid",
            "time_field": "date_time",
            "key_field": "auction",
            "schema": dict(BID.fields),
        }
    ]
    return parse_plan(
        {"name": "smq", "inputs": inputs, "operators": [counter], "output": "counter"}
    )


def disordered(plan: Plan) -> Plan:
    """`plan` with each input's watermark allowing `DISORDER_MS` of out-of-orderness."""
    from streamshift_engine.plan.parse import input_document

    inputs = [
        {**input_document(spec), "watermark": {"out_of_orderness": DISORDER_MS}}
        for spec in plan.inputs
    ]
    operators = [
        {"id": op.id, "type": op.type, "inputs": list(op.inputs), "params": dict(op.params)}
        for op in plan.operators
    ]
    document = {"name": plan.name, "inputs": inputs, "operators": operators}
    return parse_plan({**document, "output": plan.output})


def arrival(events_per_second: int) -> GeneratorConfig:
    """The generator's disorder (`nexmark.arrival`) for a stream of this rate: groups spanning
    `DISORDER_MS`, 1% late by `LATE_MS`."""
    return GeneratorConfig(
        events_per_second=events_per_second,
        out_of_order_group_size=max(2, DISORDER_MS * events_per_second // 1000),
        late_per_million=LATE_PER_MILLION,
        late_delay_ms=LATE_MS,
    )


@dataclass(frozen=True)
class Poll:
    """One poll of encoded records per input."""

    parts: tuple[tuple[str, int, Any, Any, Any], ...]
    """Per input and partition: input name, partition, encoded records (one Arrow IPC record,
    or JSON records), their partitions and offsets (Kafka metadata)."""
    events: int


def polls(
    events: int, batch: int, inputs: tuple[str, ...], order: str = "ordered"
) -> Iterator[dict[str, Batch]]:
    """Generated events in polls of about `batch` records of the given inputs: Nexmark events,
    or the seed streams `S` and `T` (half of the events each), in arrival order (`disordered`:
    as `arrival` shuffles them), their offsets counted on from poll to poll as a topic's."""
    next_offset: dict[tuple[str, int], int] = {}
    for generated in _generated(events, batch, inputs, order):
        for name, part in generated.items():
            for partition in np.unique(part.partition).tolist():
                mine = part.partition == partition
                base = next_offset.get((name, partition), 0)
                part.offset[mine] = base + np.arange(int(mine.sum()), dtype=np.int64)
                next_offset[name, partition] = base + int(mine.sum())
        yield generated


def _generated(
    events: int, batch: int, inputs: tuple[str, ...], order: str
) -> Iterator[dict[str, Batch]]:
    if inputs[0] in STREAMS:
        rate = SEED_STREAMS.per_tick * 1000 // SEED_STREAMS.tick_ms
        for start in range(0, events, batch):
            generated = seed_streams(SEED, start, min(batch, events - start), SEED_STREAMS)
            if order == "disordered":  # each stream shuffled as `nexmark.arrival` orders events
                from streamshift_engine.nexmark.arrival import arrival_order

                shuffle = arrival(rate // len(STREAMS))
                generated = {
                    name: part.take(arrival_order(SEED, np.arange(len(part)) + start, shuffle))
                    for name, part in generated.items()
                }
            yield generated
        return
    config = CONFIG if order == "ordered" else arrival(CONFIG.events_per_second)
    shares = {"person": CONFIG.person_proportion, "auction": CONFIG.auction_proportion}
    share = sum(shares.get(name, CONFIG.bid_proportion) for name in inputs)
    step = max(1, batch * CONFIG.total_proportion // share)
    for start in range(0, events, step):
        stop = min(start + step, events)
        yield generate(SEED, start, stop - start, config)


def encode_polls(
    events: int, batch: int, inputs: tuple[str, ...], fmt: str, order: str = "ordered"
) -> list[Poll]:
    encoded = []
    for generated in polls(events, batch, inputs, order):
        parts = []
        for name in inputs:
            for partition, data in by_partition(generated[name]):
                payload = _packed(encode_json(data)) if fmt == "json" else encode_columnar(data)
                parts.append((name, partition, payload, data.partition, data.offset))
        count = sum(len(generated[name]) for name in inputs)
        encoded.append(Poll(tuple(parts), count))
    return encoded


def _packed(records: list[bytes]) -> tuple[bytes, list[int]]:
    """JSON records of a poll as one buffer and their ends: kept packed, they do not pin the
    allocator arenas of the generator's garbage (unpacked, each held record keeps a whole arena
    of that garbage mapped)."""
    return b"".join(records), np.cumsum([len(r) for r in records]).tolist()


def unpacked(encoded: list[Poll], fmt: str) -> list[Poll]:
    """The polls with JSON records as `list[bytes]`, as a consumer returns them."""
    if fmt != "json":
        return encoded
    polls = []
    for poll in encoded:
        parts = []
        for name, partition, (buffer, ends), partitions, offsets in poll.parts:
            starts = [0, *ends[:-1]]
            records = [buffer[a:b] for a, b in zip(starts, ends, strict=True)]
            parts.append((name, partition, records, partitions, offsets))
        polls.append(Poll(tuple(parts), poll.events))
    return polls


def run(
    query: str, encoded: list[Poll], fmt: str, order: str = "ordered", held: bool = False
) -> tuple[float, int, int]:
    """CPU seconds for decode + process + encode of all polls through an engine `Instance` (per
    partition feed, watermark, merge order, late records to the dead letters), and the number
    of results. `held`: as the worker's mini-batch hold (`worker_hold`), the polls' records are
    held undecoded until the hold is due, then each partition's decoded in one call, fed in one
    and the pipeline run; unheld, each poll is. The plan is compiled, and its operators
    imported, before the clock starts."""
    plan = plan_of(query) if order == "ordered" else disordered(plan_of(query))
    instance = Instance(projected(plan), range(CONFIG.partitions))
    hold = worker_hold(held)
    schemas = input_schemas(plan)
    encode: Callable[[ResultBatch], Any] = (
        encode_results_records if fmt == "json" else encode_results_columnar
    )
    results = 0
    encoded = unpacked(encoded, fmt)
    waiting: dict[tuple[str, int], list[tuple[Any, Any, Any]]] = {}
    count = 0
    started = time.process_time()
    polled_at = time.monotonic()
    for poll in encoded:
        for name, partition, payload, partitions, offsets in poll.parts:
            waiting.setdefault((name, partition), []).append((payload, partitions, offsets))
        count += poll.events
        if hold is not None and not hold.due(count, time.monotonic() - polled_at):
            continue
        for (name, partition), parts in waiting.items():
            instance.feed(name, partition, decoded(name, parts, fmt, schemas[name]))
        waiting, count, polled_at = {}, 0, time.monotonic()
        for result in instance.poll():
            encode(result)
            results += len(result)
        instance.dead_letters = []  # taken, as a worker takes them after each poll
    for (name, partition), parts in waiting.items():
        instance.feed(name, partition, decoded(name, parts, fmt, schemas[name]))
    for result in instance.flush():
        encode(result)
        results += len(result)
    return time.process_time() - started, results, instance.counters["late"]


def decoded(name: str, parts: list[tuple[Any, Any, Any]], fmt: str, schema: Schema) -> Batch:
    """The records of one partition's polls decoded as a worker decodes them: JSON in one
    `decode_json` call (values, partitions and offsets joined: `joined`), columnar record by
    record."""
    if fmt != "json":
        batches = [decode_columnar(payload, schema.names) for payload, _, _ in parts]
        return batches[0] if len(batches) == 1 else Batch.concat(batches)
    if len(parts) == 1:
        payload, partitions, offsets = parts[0]
    else:
        payload = joined([part[0] for part in parts])
        partitions = np.concatenate([part[1] for part in parts])
        offsets = np.concatenate([part[2] for part in parts])
    batch, _ = decode_json(name, payload, partitions, offsets, schema)
    return batch


def joined(parts: list[list[bytes]]) -> Collection[bytes]:
    """One partition's held records as the engine's worker joins them (`Consumes.joined`):
    `Chained`, or copied into one list by an engine without it (`--against`)."""
    try:
        from streamshift_engine.events.chained import Chained
    except ImportError:
        return [record for part in parts for record in part]
    return Chained(parts)


def disorder_supported() -> bool:
    """Whether this engine generates disordered input and bounds its out-of-orderness (an
    `--against` engine from before them runs the ordered rows only)."""
    from streamshift_engine.plan import parse

    arrival = importlib.util.find_spec("streamshift_engine.nexmark.arrival")
    return arrival is not None and hasattr(parse, "input_document")


def worker_hold(held: bool) -> Hold | None:
    """The worker's mini-batch hold when `held` (none for an engine that has none:
    `--against`)."""
    if not held:
        return None
    try:
        from streamshift_engine.runner import MINI_BATCH
    except ImportError:
        return None
    return MINI_BATCH


def by_partition(batch: Batch) -> Iterator[tuple[int, Batch]]:
    """The records of each partition, in offset order (as a consumer fetches them)."""
    order = np.argsort(batch.partition, kind="stable")
    bounds = np.flatnonzero(np.diff(batch.partition[order])) + 1
    for part in np.split(order, bounds):
        if len(part):
            yield int(batch.partition[part[0]]), batch.take(part)


def decode_limit(encoded: list[Poll]) -> float:
    encoded = unpacked(encoded, "json")
    records = [r for poll in encoded for part in poll.parts for r in part[2]]
    started = time.process_time()
    for poll in encoded:
        for _, _, payload, _, _ in poll.parts:
            list(map(orjson.loads, payload))
    return len(records) / (time.process_time() - started)


def engine_decode_limit(query: str, encoded: list[Poll]) -> float:
    """The rate of the engine's own JSON decode alone (`decode_json`, as `run` calls it: the
    fields the plan reads, every field of a record checked), events per second per core."""
    schemas = input_schemas(plan_of(query))
    encoded = unpacked(encoded, "json")
    started = time.process_time()
    for poll in encoded:
        for name, _, payload, partitions, offsets in poll.parts:
            decode_json(name, payload, partitions, offsets, schemas[name])
    return sum(poll.events for poll in encoded) / (time.process_time() - started)


def decode_only(queries: list[str], events: int, batch: int, repeat: int) -> None:
    """`--decode-only`: per query, the best over `repeat` runs of the engine's JSON decode alone
    and of `orjson.loads` alone over the same records, the bounds of its JSON rate."""
    for query in queries:
        inputs = tuple(spec.name for spec in plan_of(query).inputs)
        encoded = encode_polls(events, batch, inputs, "json")
        engine = max(engine_decode_limit(query, encoded) for _ in range(repeat))
        loads = max(decode_limit(encoded) for _ in range(repeat))
        print(
            f"{query:>7} json {batch:>6}: engine decode alone {engine:>12,.0f} events/s/core, "
            f"orjson.loads alone {loads:>12,.0f}",
            flush=True,
        )


@dataclass(frozen=True)
class Measured:
    """One query's measurements in one format."""

    rate: float
    """Best engine rate over the runs."""
    results: int
    late: int
    """Records that went to the dead letters as late (disordered input)."""
    limit: float
    """Best decode limit of the same records (JSON only, else 0)."""
    ratio: float
    """Median over the runs of the engine rate over the decode limit measured just before it
    (JSON only, else 0)."""


def measure(
    query: str,
    encoded: list[Poll],
    fmt: str,
    repeat: int,
    order: str = "ordered",
    held: bool = False,
) -> Measured:
    """The engine rate over `repeat` runs and, for JSON, the decode limit of the same records
    measured before each run. The ratio pairs each run with the limit measured just before it,
    a few seconds apart, so both see about the same load on the shared core; the best rate over
    the best limit pairs measurements that may be far apart in time."""
    events = sum(poll.events for poll in encoded)
    rates: list[float] = []
    limits: list[float] = []
    results = 0
    for _ in range(repeat):
        if fmt == "json":
            limits.append(decode_limit(encoded))
        seconds, results, late = run(query, encoded, fmt, order, held)
        rates.append(events / seconds)
    ratios = [rate / limit for rate, limit in zip(rates, limits, strict=False)]
    ratio = statistics.median(ratios) if ratios else 0.0
    return Measured(max(rates), results, late, max(limits, default=0.0), ratio)


def peak_memory(query: str, events: int, batch: int) -> None:
    """Subprocess body: feed `events` generated events through `query`, print peak RSS."""
    instance = Instance(plan_of(query), range(CONFIG.partitions))
    inputs = tuple(spec.name for spec in plan_of(query).inputs)
    largest_state = 0
    for generated in polls(events, batch, inputs):
        for name in inputs:
            for partition, part in by_partition(generated[name]):
                instance.feed(name, partition, part)
        instance.poll()
        largest_state = max(largest_state, instance.state_bytes())
    instance.flush()
    print(f"{_peak_rss_mb():.0f} {largest_state / 2**20:.1f}")


def _peak_rss_mb() -> float:
    """This process's peak resident set (`VmHWM`; `ru_maxrss` would count the parent's, which
    survives fork and exec on Linux)."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def measure_memory(query: str, events: int, batch: int) -> tuple[float, float]:
    command = [sys.executable, "-m", "bench.engine", "--memory-of", query]
    command += ["--events", str(events), "--batch", str(batch)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout.split()
    return float(output[0]), float(output[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="generated events per run")
    parser.add_argument(
        "--batch",
        type=int,
        default=40_000,
        help="records per poll of the inputs (default: 5,000 per partition of 8)",
    )
    parser.add_argument(
        "--slices",
        default="5000,1000",
        help="finer polls (records) the interleaving joins also run at (5,000: a worker's poll)",
    )
    parser.add_argument("--memory-events", type=int, default=10_000_000, help="0: no memory runs")
    parser.add_argument("--repeat", type=int, default=3, help="runs per query, the best kept")
    parser.add_argument("--quick", action="store_true", help="200K events, 1M for memory")
    parser.add_argument(
        "--hold",
        action="store_true",
        help="hold the --batch rows too (runner.MINI_BATCH; the --slices rows run held and unheld)",
    )
    parser.add_argument("--queries", default=",".join(QUERIES))
    parser.add_argument(
        "--against",
        default=BASELINE,
        help="git revision whose engine runs the same cases first, its rate printed beside "
        "(empty: none)",
    )
    parser.add_argument(
        "--against-joins",
        action="store_true",
        help="run the joins of --against too (slow: that engine took them run by run)",
    )
    parser.add_argument(
        "--orders",
        default=",".join(ORDERS),
        help="the input orders each case runs on, side by side (disordered: DISORDER_MS "
        "shuffled, 1%% late)",
    )
    parser.add_argument("--formats", default="json,columnar", help="input formats to run")
    parser.add_argument(
        "--decode-only",
        action="store_true",
        help="print only the rates of the JSON decode alone (engine's, orjson's) per query",
    )
    parser.add_argument(
        "--alternate",
        type=int,
        default=0,
        help="run the --against engine and this one case by case, in this many turns each "
        "(0: the --against engine's cases all first)",
    )
    parser.add_argument("--save", help=argparse.SUPPRESS)
    parser.add_argument("--run-encoded", help=argparse.SUPPRESS)
    parser.add_argument("--memory-of", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    if args.memory_of:
        peak_memory(args.memory_of, args.events, args.batch)
        return
    if args.run_encoded:
        run_encoded(args.run_encoded, args.repeat)
        return
    if args.quick:
        args.events, args.memory_events = 200_000, 1_000_000
    if args.decode_only:
        decode_only(args.queries.split(","), args.events, args.batch, args.repeat)
        return
    cases = [
        (fmt, query, args.batch, args.hold)
        for fmt in args.formats.split(",")
        for query in args.queries.split(",")
    ]
    slices = [int(s) for s in args.slices.split(",") if s]
    joins = [q for q in args.queries.split(",") if q in JOINS]
    cases += [("json", q, size, held) for q in joins for size in slices for held in (True, False)]
    orders = [o for o in args.orders.split(",") if o == "ordered" or disorder_supported()]
    if args.alternate and args.against:
        print(
            f"{args.events:,} generated events per run, polls of about {args.batch:,} records "
            f"over {CONFIG.partitions} partitions, pinned to core {min(os.sched_getaffinity(0))}; "
            f"beside each rate: {args.against}'s engine, in {args.alternate} turns with this one",
            flush=True,
        )
        alternated(cases, orders, args)
        return
    before = baseline(args) if args.against and not args.save else {}
    print(
        f"{args.events:,} generated events per run, polls of about {args.batch:,} records "
        f"over {CONFIG.partitions} partitions, pinned to core {min(os.sched_getaffinity(0))}"
        + (f"; beside each rate: {args.against}'s engine, run first" if before else ""),
        flush=True,
    )
    rates = measure_cases(cases, orders, args.events, args.repeat, before)
    if args.save:
        with open(args.save, "wb") as saved:
            saved.write(orjson.dumps({"|".join(map(str, k)): v for k, v in rates.items()}))
        return
    for query in ("q5", "q8"):
        if args.memory_events and query in args.queries.split(","):
            peak, state = measure_memory(query, args.memory_events, args.batch)
            print(
                f"peak memory {query} over {args.memory_events:,} events: {peak:.0f} MB RSS, "
                f"largest state {state:.1f} MB",
                flush=True,
            )


Case = tuple[str, str, int, str, bool]
"""Format, query, records per poll, order of the input (`ORDERS`), held (`run`)."""
Cases = list[tuple[str, str, int, bool]]
"""Format, query, records per poll, held."""


def measure_cases(
    cases: Cases,
    orders: list[str],
    events: int,
    repeat: int,
    before: dict[str, float],
) -> dict[Case, float]:
    """Each case's best rate on each order of input, printed side by side as they come (a query
    this engine does not have is left out), with the rate `before` had for it."""
    rates: dict[Case, float] = {}
    paired: dict[str, float] = {}
    cache: dict[tuple[str, tuple[str, ...], int, str], list[Poll]] = {}
    for fmt, query, batch, held in cases:
        try:
            inputs = tuple(spec.name for spec in plan_of(query).inputs)
        except KeyError:
            continue
        columns, goals = [f"{query:>7} {fmt:>8} {batch:>6}{_held(held)}:"], ""
        for order in orders:
            if (fmt, inputs, batch, order) not in cache:
                if any(key[:3] != (fmt, inputs, batch) for key in cache):
                    cache.clear()
                    gc.unfreeze()
                    gc.collect()
                cache[fmt, inputs, batch, order] = encode_polls(events, batch, inputs, fmt, order)
                gc.freeze()
            encoded = cache[fmt, inputs, batch, order]
            measured = measure(query, encoded, fmt, repeat, order, held)
            rates[fmt, query, batch, order, held] = measured.rate
            old = before.get(f"{fmt}|{query}|{batch}|{order}|{held}")
            beside = "new" if old is None else f"{old:>10,.0f} ({measured.rate / old - 1:+.0%})"
            late = f", {measured.late} late" if order != "ordered" else ""
            columns.append(
                f"{order} {measured.rate:>10,.0f} events/s/core, before {beside:<18} "
                f"({measured.results} results{late})"
            )
            if order == "ordered":
                if fmt == "json":
                    paired.setdefault(query, measured.ratio)
                goals = _against_goals(query, fmt, measured.rate, measured.limit)
        print("  ".join([*columns, goals]), flush=True)
    if paired:
        medians = " ".join(f"{q}={paired[q]:.2f}" for q in paired)
        print(f"json rate / decode limit of the same records, median of runs paired: {medians}")
    return rates


def baseline(args: argparse.Namespace) -> dict[str, float]:
    """The rates of the same cases with the engine of git revision `args.against`, measured
    first in a subprocess."""
    with engine_of(args.against) as env, tempfile.TemporaryDirectory() as scratch:
        saved = os.path.join(scratch, "rates.json")
        command = [sys.executable, "-m", "bench.engine", "--save", saved, "--against", ""]
        command += ["--events", str(args.events), "--batch", str(args.batch)]
        command += ["--slices", args.slices, "--repeat", str(args.repeat)]
        command += ["--orders", args.orders, "--formats", args.formats]
        queries = [q for q in args.queries.split(",") if args.against_joins or q not in JOINS]
        command += ["--queries", ",".join(queries), "--memory-events", "0"]
        command += ["--hold"] if args.hold else []
        print(f"measuring {args.against}'s engine first", flush=True)
        subprocess.run(command, check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
        with open(saved, "rb") as rates:
            found: dict[str, float] = orjson.loads(rates.read())
        return found


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextmanager
def engine_of(revision: str) -> Iterator[dict[str, str]]:
    """The environment of a process that runs the engine of git revision `revision` (its
    `streamshift_engine` exported to a temporary directory, ahead on the path), with this
    checkout's builds of the C extensions whose sources the revision has (not rebuilt from
    the revision's sources)."""
    with tempfile.TemporaryDirectory() as scratch:
        archive = subprocess.run(
            ["git", "-C", ROOT, "archive", revision, "engine-image/streamshift_engine"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", scratch], input=archive, check=True)
        package = os.path.join(scratch, "engine-image", "streamshift_engine")
        here = os.path.join(ROOT, "engine-image", "streamshift_engine")
        for built in glob.glob(os.path.join(here, "**", "*.so"), recursive=True):
            target = os.path.join(package, os.path.relpath(built, here))
            name = os.path.basename(built).split(".")[0]
            if os.path.exists(os.path.join(os.path.dirname(target), f"{name}.c")):
                shutil.copy(built, target)
        path = os.pathsep.join([os.path.join(scratch, "engine-image"), ROOT])
        yield {**os.environ, "PYTHONPATH": path}


def alternated(cases: Cases, orders: list[str], args: argparse.Namespace) -> None:
    """`--alternate`: per case and order, the polls encoded once, then `args.alternate` turns
    of a process of the `--against` engine and one of this engine, each running them
    `args.repeat` times; the best rate of each side printed side by side, with both sides'
    result and late counts."""
    with engine_of(args.against) as env:
        engines = {"before": env, "after": {**os.environ}}
        for fmt, query, batch, held in cases:
            try:
                inputs = tuple(spec.name for spec in plan_of(query).inputs)
            except KeyError:
                continue
            columns = [f"{query:>7} {fmt:>8} {batch:>6}{_held(held)}:"]
            for order in orders:
                encoded = encode_polls(args.events, batch, inputs, fmt, order)
                events = sum(poll.events for poll in encoded)
                best = {"before": 0.0, "after": 0.0}
                counts: dict[str, tuple[int, int] | None] = {"before": None, "after": None}
                with tempfile.NamedTemporaryFile(suffix=".pickle") as saved:
                    pickle.dump((query, fmt, order, held, encoded), saved)
                    saved.flush()
                    del encoded
                    for _ in range(args.alternate):
                        for side, side_env in engines.items():
                            found = _run_child(saved.name, args.repeat, side_env)
                            if found is not None:
                                best[side] = max(best[side], events / found[0])
                                counts[side] = (found[1], found[2])
                after, before = best["after"], best["before"]
                change = f"{after / before - 1:+.0%}" if before else "n/a"
                results, late = counts["after"] or (0, 0)
                same = "same" if counts["before"] == counts["after"] else f"{counts['before']}"
                columns.append(
                    f"{order} {after:>10,.0f} events/s/core, before {before:>10,.0f} "
                    f"({change}) ({results} results, {late} late; before: {same})"
                )
            print("  ".join(columns), flush=True)


def _run_child(path: str, repeat: int, env: dict[str, str]) -> tuple[float, int, int] | None:
    """Best CPU seconds of `repeat` runs over the pickled polls in a fresh process with `env`,
    with its result and late counts; None when that engine cannot run the case."""
    command = [sys.executable, "-m", "bench.engine", "--run-encoded", path]
    command += ["--repeat", str(repeat)]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        return None
    seconds, results, late = orjson.loads(done.stdout.splitlines()[-1])
    return float(seconds), int(results), int(late)


def run_encoded(path: str, repeat: int) -> None:
    """Subprocess body of `--alternate`: the best of `repeat` runs over the pickled polls,
    after one run not counted (a fresh process's first run also builds its caches)."""
    with open(path, "rb") as saved:
        query, fmt, order, held, encoded = pickle.load(saved)
    gc.freeze()
    runs = [run(query, encoded, fmt, order, held) for _ in range(repeat + 1)][1:]
    seconds = min(r[0] for r in runs)
    print(orjson.dumps([seconds, runs[-1][1], runs[-1][2]]).decode())


def _held(held: bool) -> str:
    """A row's label: whether the pipeline ran held (`run`; polls larger than the hold run it
    every poll either way)."""
    return "   held" if held else " unheld"


def _against_goals(query: str, fmt: str, rate: float, limit: float) -> str:
    if fmt == "columnar":
        return f"(goal 1M: {'met' if rate >= 1e6 else 'missed'})" if query in FLINK_PER_CORE else ""
    goals = [("decode limit", limit), ("half of it", limit / 2)]
    if query in FLINK_PER_CORE:
        goals.append(("Flink", FLINK_PER_CORE[query]))
    return " ".join(
        f"({name} {goal:,.0f}: {'met' if rate >= goal else 'missed'})" for name, goal in goals
    )


if __name__ == "__main__":
    main()
