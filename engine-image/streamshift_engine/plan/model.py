"""The plan model: inputs, operator nodes and output of a continuous query, and what they imply.

A `Plan` is the validated form of a query DAG (see `plan.parse` for the YAML/JSON layout). Besides
the nodes it records, per node, the fields it produces, the fields that key its results and
whether its state is keyed by the partition key; from those it answers what the protocols ask:
the controlling window (seed 000 (Pham et al., UniMiCo) section 3.1.1: the last window operator of
the query), whether it joins, whether its state is unbounded, and whether it can run at
parallelism > 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

WindowKind = Literal["time", "rows", "session", "range"]
STATEFUL_TYPES = frozenset(
    {
        "window_aggregate",
        "window_join",
        "stateful_map",
        "topk",
        "auction_close",
        "running_aggregate",
    }
)
UNBOUNDED_TYPES = frozenset({"stateful_map", "running_aggregate"})


@dataclass(frozen=True)
class WatermarkSpec:
    """How an input's event time advances: Flink's `WatermarkStrategy` for one source.

    - `out_of_orderness` (ms, Flink's `forBoundedOutOfOrderness`): a partition's watermark is its
      largest event time read minus this bound. A record behind its partition's largest event
      time by at most this much is not late: it waits and is released in event-time order once
      the watermark passes it. 0 (the default): any record below its partition's maximum is late.
    - `allowed_lateness` (ms, Flink's window `allowedLateness`): records up to this much behind the
      partition's watermark are still counted in their windows. The engine emits each result
      once and never updates it, so the only exact reading of Flink's allowed lateness is its
      last firing: windows fire this much later, which makes it an addition to the bound
      (`delay`). Records behind by more are late (dead letters with reason `late`). Default 0.
    - `idle_timeout` (seconds of the instance's clock, Flink's `withIdleness`): a partition that
      got no record for that long is left out of the watermark. None (default): only marked.
    - `max_future` (ms): a record more than this ahead of its partition's watermark is poison
      (a clock gone wrong), not progress: it goes to the dead letters with reason `future` and
      does not move the watermark. None (the default) is off: a partition whose event time
      legitimately jumps by more than the bound (a producer that paused, a replay of old data
      followed by new) would send every later record to the dead letters, and no default can
      know a topic's gaps. Set it above any real gap of the topic's partitions.
    """

    out_of_orderness: int = 0
    allowed_lateness: int = 0
    idle_timeout: float | None = None
    max_future: int | None = None

    @property
    def delay(self) -> int:
        """How far a partition's watermark trails its largest event time read."""
        return self.out_of_orderness + self.allowed_lateness


@dataclass(frozen=True)
class InputSpec:
    """One input stream: a topic, its event-time field, its partition key, its field types and
    its watermark strategy."""

    name: str
    topic: str
    time_field: str
    key_field: str
    schema: Mapping[str, str]
    watermark: WatermarkSpec = WatermarkSpec()


@dataclass(frozen=True)
class WindowSpec:
    """A window: `time` (size and slide in ms), `rows` (size and slide in tuples), `session`
    (`size` is the gap in ms, slide 0) or `range` (a join's time constraint W in ms, slide 0)."""

    kind: WindowKind
    size: int
    slide: int

    @property
    def tumbling(self) -> bool:
        return self.kind in ("time", "rows") and self.size == self.slide


@dataclass(frozen=True)
class OperatorSpec:
    """One operator node: its id, type, upstream node names (inputs or operators) and params."""

    id: str
    type: str
    inputs: tuple[str, ...]
    params: Mapping[str, Any]


@dataclass(frozen=True)
class NodeInfo:
    """What validation learned about a node's output stream."""

    fields: Mapping[str, str]
    key_field: str | None
    result_keys: tuple[str, ...]
    keyed: bool = True
    window: WindowSpec | None = None


@dataclass(frozen=True)
class Plan:
    """A validated query plan; build one with `parse_plan` or `builtin`."""

    name: str
    inputs: tuple[InputSpec, ...]
    operators: tuple[OperatorSpec, ...]
    output: str
    nodes: Mapping[str, NodeInfo] = field(repr=False)

    def input(self, name: str) -> InputSpec:
        for spec in self.inputs:
            if spec.name == name:
                return spec
        raise KeyError(name)

    @property
    def controlling_window(self) -> WindowSpec | None:
        """The window of the last window operator before the output (seed 000, 3.1.1)."""
        windows = [self.nodes[op.id].window for op in self.operators]
        present = [w for w in windows if w is not None]
        return present[-1] if present else None

    @property
    def joins(self) -> bool:
        return any(op.type == "window_join" for op in self.operators)

    @property
    def unbounded_state(self) -> bool:
        """True when some state never expires (the per-key counter of SMQ, the running
        per-category average of Nexmark q4)."""
        return any(op.type in UNBOUNDED_TYPES for op in self.operators)

    @property
    def keyed(self) -> bool:
        """True when all state is keyed by the partition key, so the plan runs at any
        parallelism; False when some operator is global and the plan must run at parallelism 1."""
        return all(self.nodes[op.id].keyed for op in self.operators if op.type in STATEFUL_TYPES)

    @property
    def result_keys(self) -> tuple[str, ...]:
        return self.nodes[self.output].result_keys
