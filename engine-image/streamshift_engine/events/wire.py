"""Wire formats of events and results: JSON (one event per record) and Arrow IPC (many per record).

JSON is what other producers send: one UTF-8 object per Kafka record, the fields of a `Schema`,
the event time in the schema's `time_field` (int milliseconds). Decoding is batched and tries
three paths, each exact, the first that accepts the whole batch giving its columns: records
holding the schema's fields (read and unread), all well formed, are decoded typed by msgspec
(`typed_json`, which skips the unread values of plain ASCII batches: `_skippable`); otherwise
all records are parsed with `orjson.loads` in one C-level `map`, then each field becomes one
numpy column with a single type check over the column. Only when that meets a malformed record
does the batch fall back to checking record by record; each malformed record (bad JSON, not an
object, missing field, wrong type, integer outside int64) becomes a `DeadLetter` with a precise
reason, and decoding continues with the next record.

Parsing all records of a poll in one `orjson.loads` call, joined into a JSON array, saves a call per
record (docs/performance.md), but is not exact: records that are each malformed can join into a
valid array of the right length (`{"a":[{}` then `{}]}` make one object, `{},{}` makes two), so a
poll could be decoded wrongly instead of dead-lettered. Each record is therefore parsed on its own.

The columnar format is one Arrow IPC stream per Kafka record holding a whole `Batch`: the
payload columns plus `__ts`, `__partition` and `__offset`, the source name in the schema
metadata. Decoding is zero-copy for numeric columns; `columns=` reads only the named payload
columns (projection), which skips building Python strings a query never reads.
"""

from __future__ import annotations

import gc
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from streamshift_engine.events import event_json, result_json, typed_json
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch

if TYPE_CHECKING:
    from typing_extensions import Buffer

FieldKind = Literal["int", "float", "str"]
_META_COLUMNS = ("__ts", "__partition", "__offset")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class Schema:
    """The fields of one source's JSON records and which of them is the event time.

    `unread` names fields the records also hold but a query does not read (see `project`):
    they get no column and are not checked, but records holding exactly `fields` and `unread`
    can take the typed fast path (any records can, where it skips the unread values)."""

    source: str
    fields: tuple[tuple[str, FieldKind], ...]
    time_field: str
    unread: tuple[tuple[str, FieldKind], ...] = ()
    record_order: tuple[str, ...] = field(default=(), compare=False)
    """The names of `fields` and `unread` in the order records hold them, when known (`project`
    keeps the order of the schema it projects); empty: `fields`, then `unread`. The typed
    reader declares its struct's fields in this order: msgspec matches a record's keys fastest
    when they come in the declared order."""
    reader: typed_json.Reader = field(init=False, repr=False, compare=False)
    """The typed path's reader of `fields` in records holding `fields` and `unread`, built
    once: a worker decodes every input partition of every consume, so a call's fixed cost
    counts."""

    def __post_init__(self) -> None:
        if dict(self.fields).get(self.time_field) != "int":
            raise ValueError(f"schema {self.source!r}: time field must be an int field")
        every = self.fields + self.unread
        if self.record_order:
            place = {name: index for index, name in enumerate(self.record_order)}
            every = tuple(sorted(every, key=lambda pair: place.get(pair[0], len(place))))
        object.__setattr__(self, "reader", typed_json.columns_reader(every, self.fields))

    def __reduce__(self) -> tuple[type[Schema], tuple[Any, ...]]:
        """Pickled by its fields (Spark ships schemas to executors); the reader is built anew."""
        fields = (self.source, self.fields, self.time_field, self.unread, self.record_order)
        return Schema, fields

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.fields)

    def project(self, names: Collection[str]) -> Schema:
        """The schema of just the named fields (and the time field), in schema order: decoding
        then reads and checks only what a query uses."""
        kept = tuple((n, k) for n, k in self.fields if n in names or n == self.time_field)
        dropped = tuple(pair for pair in self.fields if pair not in kept)
        order = self.record_order or tuple(n for n, _ in self.fields + self.unread)
        return Schema(self.source, kept, self.time_field, self.unread + dropped, order)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record the engine could not use, where it came from and why."""

    source: str
    partition: int
    offset: int
    reason: str
    raw: bytes


def dead_letters_of(records: Batch, reason: str) -> list[DeadLetter]:
    """Dead letters for decoded records, each its event time and fields as JSON (the worker
    replaces them by the original record before it writes them)."""
    rows = zip(
        records.partition.tolist(),
        records.offset.tolist(),
        records.ts.tolist(),
        records.rows(),
        strict=True,
    )
    return [
        DeadLetter(
            records.source,
            partition,
            offset,
            reason,
            orjson.dumps({"ts": ts, **row}, option=orjson.OPT_SERIALIZE_NUMPY),
        )
        for partition, offset, ts, row in rows
    ]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while records are converted in bulk.

    Parsing or serialising a batch creates many short-lived dicts and strings but no reference
    cycles (reference counting frees them), yet their allocation keeps triggering collections
    that rescan every live object, which costs several times the conversion itself. It is
    resumed, and only if it was enabled, when the block ends.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def encode_json(batch: Batch) -> list[bytes]:
    """One JSON object per record with the batch's payload columns (the time field among them):
    per record the bytes of `orjson.dumps` of its dict, built column-wise by `event_json`."""
    with _collector_paused():
        records: list[bytes] = event_json.encode_events_json(batch).to_pylist()
    return records


def decode_json(
    source: str,
    records: Collection[Buffer],
    partitions: Sequence[int] | npt.NDArray[np.integer[Any]],
    offsets: Sequence[int] | npt.NDArray[np.integer[Any]],
    schema: Schema,
) -> tuple[Batch, list[DeadLetter]]:
    """Decode JSON records of one source; malformed ones come back as dead letters. Records
    are bytes or any read-only buffer (a Kafka record where the consumer holds it), in any
    collection (several consumes' lists as one: `Chained`): the typed path reads them in place;
    orjson, on the slower paths, reads copies of them as bytes."""
    partition = np.asarray(partitions, dtype=np.int32)
    offset = np.asarray(offsets, dtype=np.int64)
    if not len(partition) == len(offset) == len(records):
        raise ValueError("decode_json: records, partitions and offsets differ in length")
    was_enabled = gc.isenabled()  # `_collector_paused`, inline: this runs once a partition a poll
    gc.disable()
    try:
        columns = _typed_or_parsed(records, schema)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, OverflowError):
        return _decode_checked(source, list(map(bytes, records)), partition, offset, schema)
    finally:
        if was_enabled:
            gc.enable()
    batch = Batch(source, columns[schema.time_field], partition, offset, columns)
    return batch, []


def _typed_or_parsed(records: Collection[Buffer], schema: Schema) -> dict[str, npt.NDArray[Any]]:
    """Columns by the typed path, else by parsing every record; raises if a record is malformed."""
    try:
        return schema.reader(records)
    except typed_json.Errors:
        return _columns(list(map(orjson.loads, map(bytes, records))), schema)


def _columns(objects: list[Any], schema: Schema) -> dict[str, npt.NDArray[Any]]:
    """Columns of well-formed objects; raises on the first sign of a malformed one."""
    columns: dict[str, npt.NDArray[Any]] = {}
    for name, kind in schema.fields:
        values = list(map(itemgetter(name), objects))
        types = set(map(type, values))
        if kind == "str" and types <= {str}:
            column = np.empty(len(values), dtype=object)
            column[:] = values
        elif kind == "int" and types <= {int}:
            column = np.array(values, dtype=np.int64)
        elif kind == "float" and types <= {int, float}:
            column = np.array(values, dtype=np.float64)
        else:
            raise TypeError(name)
        columns[name] = column
    return columns


def _decode_checked(
    source: str,
    records: Sequence[bytes],
    partition: npt.NDArray[np.int32],
    offset: npt.NDArray[np.int64],
    schema: Schema,
) -> tuple[Batch, list[DeadLetter]]:
    """The slow path: check every record, keep the good ones, explain the bad ones."""
    good: list[Any] = []
    keep: list[int] = []
    dead: list[DeadLetter] = []
    for position, raw in enumerate(records):
        reason, parsed = _check(raw, schema)
        if reason is None:
            good.append(parsed)
            keep.append(position)
        else:
            where = int(partition[position]), int(offset[position])
            dead.append(DeadLetter(source, where[0], where[1], reason, bytes(raw)))
    columns = _columns(good, schema)
    kept = np.array(keep, dtype=np.int64)
    batch = Batch(source, columns[schema.time_field], partition[kept], offset[kept], columns)
    return batch, dead


def _check(raw: bytes, schema: Schema) -> tuple[str | None, Any]:
    """`(None, object)` for a well-formed record, otherwise `(reason, None)`."""
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        return f"bad json: {error}", None
    if not isinstance(parsed, dict):
        return f"not a JSON object: {type(parsed).__name__}", None
    for name, kind in schema.fields:
        if name not in parsed:
            return f"missing field {name!r}", None
        value = parsed[name]
        if not _has_kind(value, kind):
            return f"wrong type for field {name!r}: expected {kind}, got {_json_type(value)}", None
        if kind == "int" and not _INT64_MIN <= value <= _INT64_MAX:
            return f"field {name!r} out of int64 range: {value}", None
    return None, parsed


def _has_kind(value: Any, kind: FieldKind) -> bool:
    if kind == "int":
        return type(value) is int
    if kind == "float":
        return type(value) in (int, float)
    return type(value) is str


def _json_type(value: Any) -> str:
    names = {bool: "bool", int: "int", float: "float", str: "str", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def encode_columnar(batch: Batch) -> bytes:
    """A whole batch as one Arrow IPC stream."""
    arrays = [pa.array(batch.ts), pa.array(batch.partition), pa.array(batch.offset)]
    arrays += [_to_arrow(column) for column in batch.columns.values()]
    names = [*_META_COLUMNS, *batch.columns]
    record_batch = pa.RecordBatch.from_arrays(arrays, names=names)
    return _ipc_bytes(record_batch.replace_schema_metadata({"source": batch.source}))


def decode_columnar(data: bytes, columns: Collection[str] | None = None) -> Batch:
    """The batch in one Arrow IPC stream; `columns` limits the payload columns read."""
    table = pa.ipc.open_stream(data).read_all().combine_chunks()
    source = table.schema.metadata[b"source"].decode()
    names = [n for n in table.column_names if n not in _META_COLUMNS]
    if columns is not None:
        names = [n for n in names if n in columns]
    ts, partition, offset = (_to_numpy(table.column(n)) for n in _META_COLUMNS)
    payload = {name: _to_numpy(table.column(name)) for name in names}
    return Batch(source, ts, partition, offset, payload)


def _to_arrow(column: npt.NDArray[Any]) -> pa.Array:
    if column.dtype == object:
        return pa.array(column, type=pa.string() if len(column) == 0 else None)
    return pa.array(column)


def _to_numpy(column: pa.ChunkedArray) -> npt.NDArray[Any]:
    """Numeric columns zero-copy; strings as an object array of `str` (built by Arrow in C++)."""
    if column.num_chunks == 0:
        is_text = pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
        return np.empty(0, dtype=object if is_text else column.type.to_pandas_dtype())
    return np.asarray(column.chunk(0).to_numpy(zero_copy_only=False))


def encode_results_json(results: ResultBatch) -> list[bytes]:
    """One JSON object per result: its id, window bounds, key and value fields (the records of
    `ResultBatch.to_records`, built column-wise by `result_json`)."""
    with _collector_paused():
        return result_json.encode_results_json(results, result_id_parts)


def encode_results_records(results: ResultBatch) -> pa.Array:
    """The records of `encode_results_json` as one Arrow binary array (record i: result i),
    without a Python `bytes` per result."""
    return result_json.encode_results_records(results, result_id_parts)


def encode_results_columnar(results: ResultBatch) -> bytes:
    """Results as one Arrow IPC stream: ids, metadata, key and value columns."""
    arrays = [result_ids(results)]
    names = ["id", "partition", "window_start", "window_end", "min_ts", "max_ts"]
    metadata = [results.partition, results.window_start, results.window_end]
    arrays += [pa.array(a) for a in [*metadata, results.min_ts, results.max_ts]]
    for name, column in [*results.keys.items(), *results.values.items()]:
        if name == "id":
            continue  # a join's identity: already the key part of the result id
        arrays.append(_to_arrow(column))
        names.append(name)
    return _ipc_bytes(pa.RecordBatch.from_arrays(arrays, names=names))


def result_ids(results: ResultBatch) -> pa.Array:
    """`results.ids()` as an Arrow string array (from `result_id_parts`)."""
    parts = result_id_parts(results, result_json.Texts())
    if len(parts) == 1 and isinstance(parts[0], pa.Array):
        return parts[0]
    return result_json.joined(parts, len(results), pa.string())


def result_id_parts(results: ResultBatch, texts: result_json.Texts) -> list[result_json.Part]:
    """The result ids as parts whose concatenation, row by row, is `results.ids()`: joined by
    Arrow compute when every key column holds integers or strings (whose Arrow text equals
    Python's `str`), window bounds holding one value as constant text; else the whole ids from
    `ids()`. Column texts come from `texts` (made once per encoding). At least one part is an
    array. The ids of `places` are written from their integers:
    `source@`, the partition, `:` and the offset (an array)."""
    if results.places is not None and len(results):
        starts, ends = (texts.integers(b) for b in (results.window_start, results.window_end))
        partition = texts.integers(results.partition)
        offset = pc.cast(pa.array(results.places.offset), pa.string())
        return [
            f"{results.query}|",
            starts,
            "|",
            ends,
            f"|{results.places.source}@",
            partition,
            ":",
            offset,
        ]
    key_texts = [_key_text(column, texts) for column in results.keys.values()]
    if len(results) == 0 or any(text is None for text in key_texts):
        return [pa.array(results.ids(), type=pa.string())]
    if not key_texts:
        bounds = [
            pc.cast(pa.array(b), pa.string()) for b in (results.window_start, results.window_end)
        ]
        return [f"{results.query}|", bounds[0], "|", bounds[1], "|"]
    starts, ends = (texts.integers(b) for b in (results.window_start, results.window_end))
    parts: list[result_json.Part] = [f"{results.query}|", starts, "|", ends, "|"]
    for index, text in enumerate(key_texts):
        parts += [":", text] if index else [text]
    return parts


def _key_text(column: npt.NDArray[Any], texts: result_json.Texts) -> result_json.Part | None:
    """An integer or string key column as text; None for any other column."""
    if column.dtype.kind in "iu":
        return texts.integers(column)
    if column.dtype != object:
        return None
    inferred = texts.inferred(column)
    if inferred is None:
        return None
    is_text = pa.types.is_string(inferred.type) and inferred.null_count == 0
    return inferred if is_text else None


def _ipc_bytes(record_batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, record_batch.schema) as writer:
        writer.write_batch(record_batch)
    return bytes(sink.getvalue())
