"""The reference queries in Spark SQL, written independently of the engine's operators.

Each query takes a `Source` (a function giving the events of one Nexmark kind as a DataFrame
with `partition` and, on request, `offset`) and returns a DataFrame of `id` plus the result's
value columns. Ids follow `ResultBatch.ids()`: `query|window_start|window_end|key`, with `-1`
bounds for unwindowed results, key parts joined by `:`, and a record's own identity
`source@partition:offset` (joins: `left*right`) where the result has no key columns.

Semantics (those of `plan.nexmark_queries` and `plan.builtin`): windows are aligned to epoch 0;
every window that holds an event is emitted (end of input fires the rest); top-k keeps ties.
SMQ is the stateful map of seed 003 (Bartnik et al., On-the-fly Reconfiguration) over bids (`key` =
auction, `value` = price): each record gets its key's running count in event-time order (ties by
partition, then offset).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from streamshift_engine.plan.nexmark_queries import (
    EURO_PER_DOLLAR,
    HOT_ITEMS_SLIDE_MS,
    SELECTED_AUCTION_MODULUS,
    WINDOW_MS,
)

Source = Callable[[str, Sequence[str] | None, bool], Any]
BID_FIELDS = ("auction", "bidder", "price", "date_time", "extra")


def sql_functions() -> Any:
    from pyspark.sql import functions

    return functions


def identity(kind: str, alias: str = "") -> Any:
    F = sql_functions()
    col = (lambda n: F.col(f"{alias}.{n}")) if alias else F.col
    return F.concat(F.lit(f"{kind}@"), col("partition"), F.lit(":"), col("offset"))


def with_ids(frame: Any, query: str, key: Any, windowed: bool) -> Any:
    F = sql_functions()
    start = F.col("window_start") if windowed else F.lit(-1)
    end = F.col("window_end") if windowed else F.lit(-1)
    return frame.withColumn("id", F.concat_ws("|", F.lit(query), start, end, key))


def _tumbling(frame: Any, size: int) -> Any:
    F = sql_functions()
    start = F.expr(f"(date_time div {size}) * {size}")
    return frame.withColumn("window_start", start).withColumn(
        "window_end", F.col("window_start") + size
    )


def _sliding(frame: Any, size: int, slide: int) -> Any:
    """One row per window `[start, start + size)` holding the event, starts on the slide."""
    F = sql_functions()
    last = F.expr(f"(date_time div {slide}) * {slide}")
    first = F.expr(f"((date_time - {size}) div {slide}) * {slide} + {slide}")
    starts = F.sequence(first, last, F.lit(slide).cast("bigint"))
    exploded = frame.withColumn("window_start", F.explode(starts))
    return exploded.withColumn("window_end", F.col("window_start") + size)


def q0(source: Source) -> Any:
    bids = source("bid", BID_FIELDS, True)
    return with_ids(bids, "nexmark-q0", identity("bid"), False).select("id", *BID_FIELDS)


def q1(source: Source) -> Any:
    F = sql_functions()
    bids = source("bid", BID_FIELDS, True)
    euro = bids.withColumn("price", F.col("price").cast("double") * F.lit(EURO_PER_DOLLAR))
    return with_ids(euro, "nexmark-q1", identity("bid"), False).select("id", *BID_FIELDS)


def q2(source: Source) -> Any:
    F = sql_functions()
    bids = source("bid", ("auction", "price"), True)
    selected = bids.where(F.col("auction") % SELECTED_AUCTION_MODULUS == 0)
    return with_ids(selected, "nexmark-q2", identity("bid"), False).select("id", "auction", "price")


def q3(source: Source) -> Any:
    F = sql_functions()
    persons = source("person", ("id", "name", "city", "state"), True).alias("p")
    auctions = source("auction", ("id", "seller", "category"), True).alias("a")
    local = persons.where(F.col("state").isin("OR", "ID", "CA"))
    joined = auctions.where(F.col("category") == 10).join(local, F.col("a.seller") == F.col("p.id"))
    key = F.concat(identity("auction", "a"), F.lit("*"), identity("person", "p"))
    out = joined.select(
        key.alias("key"),
        F.col("p.name").alias("name"),
        F.col("p.city").alias("city"),
        F.col("p.state").alias("state"),
        F.col("a.id").alias("auction"),
    )
    return with_ids(out, "nexmark-q3", F.col("key"), False).select(
        "id", "name", "city", "state", "auction"
    )


def q5(source: Source) -> Any:
    F = sql_functions()
    bids = _sliding(source("bid", ("auction", "date_time"), False), WINDOW_MS, HOT_ITEMS_SLIDE_MS)
    counts = bids.groupBy("window_start", "window_end", "auction").agg(F.count("*").alias("bids"))
    best = counts.groupBy("window_start").agg(F.max("bids").alias("top"))
    hottest = counts.join(best, "window_start").where(F.col("bids") == F.col("top"))
    key = F.col("auction").cast("string")
    return with_ids(hottest, "nexmark-q5", key, True).select("id", "auction", "bids")


def q7(source: Source) -> Any:
    from pyspark.sql import Window

    F = sql_functions()
    bids = _tumbling(source("bid", BID_FIELDS, True), WINDOW_MS)
    top = F.max("price").over(Window.partitionBy("window_start"))
    highest = bids.withColumn("top", top).where(F.col("price") == F.col("top"))
    return with_ids(highest, "nexmark-q7", identity("bid"), True).select("id", *BID_FIELDS)


def q8(source: Source) -> Any:
    """Persons joined, in their registration window, with that window's auction count of
    theirs (`sellers`); the identity is the person's and the seller group's (`sellers|w|key`)."""
    F = sql_functions()
    persons = _tumbling(source("person", ("id", "name", "date_time"), True), WINDOW_MS)
    persons = persons.withColumnRenamed("id", "person")
    auctions = _tumbling(source("auction", ("seller", "date_time"), False), WINDOW_MS)
    sellers = auctions.groupBy("window_start", "seller").agg(F.count("*").alias("auctions"))
    joined = persons.join(
        sellers,
        (F.col("person") == F.col("seller")) & (persons.window_start == sellers.window_start),
    ).drop(sellers.window_start)
    group = F.concat_ws("|", F.lit("sellers"), "window_start", "window_end", "seller")
    key = F.concat(identity("person"), F.lit("*"), group)
    return with_ids(joined, "nexmark-q8", key, True).select(
        "id",
        F.col("person").alias("people.id"),
        F.col("name").alias("people.name"),
        F.col("seller").alias("sellers.seller"),
        F.col("auctions").alias("sellers.auctions"),
    )


def smq(source: Source) -> Any:
    from pyspark.sql import Window

    F = sql_functions()
    bids = source("bid", ("auction", "price", "date_time"), True)
    order = Window.partitionBy("auction").orderBy("date_time", "partition", "offset")
    counted = bids.withColumn("count", F.row_number().over(order).cast("bigint"))
    out = with_ids(counted, "smq", identity("numbers"), False)
    return out.select(
        "id",
        F.col("date_time").alias("ts"),
        F.col("auction").alias("key"),
        F.col("price").alias("value"),
        "count",
    )


NEXMARK_QUERIES: dict[str, Callable[[Source], Any]] = {
    "nexmark-q0": q0,
    "nexmark-q1": q1,
    "nexmark-q2": q2,
    "nexmark-q3": q3,
    "nexmark-q5": q5,
    "nexmark-q7": q7,
    "nexmark-q8": q8,
    "smq": smq,
}
"""The Nexmark queries and SMQ; the seeds' q1, q2 and q3 are in `seed_queries`."""
