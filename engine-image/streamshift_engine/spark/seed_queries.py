"""The seed queries Q1, Q2 and Q3 (seed 000 (Pham et al., UniMiCo), section 4) in Spark SQL, for the
oracle.

Written from the queries' definitions and the engine's documented order (`runner`: records reach
the plan in the merge order `(ts, input index, partition, offset)`, `S` before `T`), not from the
engine's operators:

- `q1`: `S [Range 10 s] join T [Range 10 s] on l`: every pair with equal `l` whose timestamps
  are at most 10 s apart (seed 001 (Zhu et al., Dynamic Plan Migration) section 2: a combined
  tuple's span is at most the range). Its id is the sorted identities of its parts (`S@p:o*T@p:o`);
  values `S.ts`, `S.l`, `S.m`, `T.ts`, `T.l`, `T.m`.
- `q2`: `sum(m) over S [Rows 5]`, sliding by one tuple, global: one result per `S` tuple in the
  merge order, over it and the four before it. Its key `row` is the closing tuple's identity;
  `window_start`/`window_end` are the oldest tuple's `ts` and the newest's plus one.
- `q3`: `sum(S.m)` over `[Rows 5]` of Q1's results, in the order the symmetric join emits them
  (seed 001 section 2: purge, join, insert per arriving tuple): by the later part in the merge
  order (the arriving tuple), then by the earlier part in its own stream's order (the stored
  tuples). A join result's time is its arriving part's `ts`.
"""

from __future__ import annotations

from typing import Any

from streamshift_engine.plan.builtin import SEED_RANGE_MS, SEED_ROWS
from streamshift_engine.spark.queries import Source, identity, sql_functions, with_ids

SEED_FIELDS = ("ts", "l", "m")


def _side(source: Source, name: str) -> Any:
    """One stream with its identity and its place in the merge order, columns prefixed."""
    F = sql_functions()
    frame = source(name, SEED_FIELDS, True)
    frame = frame.withColumn("ident", identity(name)).withColumn("input", F.lit(STREAM_INDEX[name]))
    keep = (*SEED_FIELDS, "ident", "input", "partition", "offset")
    return frame.select(*(F.col(c).alias(f"{name}_{c}") for c in keep))


STREAM_INDEX = {"S": 0, "T": 1}


def _pairs(source: Source) -> Any:
    """Q1's join results with both parts' fields and merge-order places."""
    F = sql_functions()
    s, t = _side(source, "S"), _side(source, "T")
    near = F.abs(F.col("S_ts") - F.col("T_ts")) <= SEED_RANGE_MS
    return s.join(t, (F.col("S_l") == F.col("T_l")) & near)


def q1(source: Source) -> Any:
    F = sql_functions()
    pairs = _pairs(source).withColumn("key", F.concat_ws("*", "S_ident", "T_ident"))
    values = [F.col(f"{side}_{c}").alias(f"{side}.{c}") for side in "ST" for c in SEED_FIELDS]
    return with_ids(pairs, "q1", F.col("key"), False).select("id", *values)


def _rows_sum(frame: Any, query: str, order: list[Any], value: str) -> Any:
    """`sum(value)` over the last `SEED_ROWS` rows of a global order, one result per row; the
    frame carries `ts` and `row` (the closing row's identity)."""
    from pyspark.sql import Window

    F = sql_functions()
    window = Window.orderBy(*order).rowsBetween(-(SEED_ROWS - 1), Window.currentRow)
    summed = frame.select(
        "row",
        F.sum(value).over(window).alias("sum"),
        F.first("ts").over(window).alias("window_start"),
        (F.col("ts") + 1).alias("window_end"),
    )
    return with_ids(summed, query, F.col("row"), True).select("id", "row", "sum")


def q2(source: Source) -> Any:
    F = sql_functions()
    s = source("S", SEED_FIELDS, True).withColumn("row", identity("S"))
    order = [F.col("ts"), F.col("partition"), F.col("offset")]
    return _rows_sum(s, "q2", order, "m")


def q3(source: Source) -> Any:
    F = sql_functions()
    pairs = _pairs(source)
    s_later = (F.col("S_ts") > F.col("T_ts")).alias("s_later")
    pairs = pairs.withColumn("s_later", s_later)

    def part(arriving: bool, field: str) -> Any:
        first, second = ("S", "T") if arriving else ("T", "S")
        return F.when(F.col("s_later"), F.col(f"{first}_{field}")).otherwise(
            F.col(f"{second}_{field}")
        )

    place = ("ts", "input", "partition", "offset")
    order = [part(True, f) for f in place] + [part(False, f) for f in place]
    rows = pairs.select(
        F.concat_ws("*", "S_ident", "T_ident").alias("row"),
        part(True, "ts").alias("ts"),
        F.col("S_m").alias("m"),
        *(o.alias(f"o{i}") for i, o in enumerate(order)),
    )
    return _rows_sum(rows, "q3", [F.col(f"o{i}") for i in range(len(order))], "m")


SEED_QUERIES = {"q1": q1, "q2": q2, "q3": q3}
