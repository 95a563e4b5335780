"""A valid StreamQuery spec for nexmark-q5 that the operator's unit tests vary field by field."""

from typing import Any

from streamshift_operator.models.streamquery import StreamQuerySpec


def q5_spec(**changes: Any) -> StreamQuerySpec:
    """The q5 spec over four partitions at parallelism 2, with `changes` to top-level fields."""
    base: dict[str, Any] = {
        "plan": {"builtin": "nexmark-q5"},
        "kafka": {"bootstrapServers": "127.0.0.1:9092"},
        "sources": [{"name": "bids", "topic": "bids", "partitions": 4}],
        "sinks": [{"name": "out", "topic": "q5-out"}],
        "parallelism": 2,
        "snapshot": {
            "endpoint": "http://127.0.0.1:9000",
            "bucket": "snapshots",
            "credentials": {
                "accessKey": {"name": "s3", "key": "access"},
                "secretKey": {"name": "s3", "key": "secret"},
            },
        },
        "controlToken": {"name": "control", "key": "token"},
    }
    base.update(changes)
    return StreamQuerySpec.model_validate(base)


def builtin_spec(plan: str, sources: list[str], parallelism: int) -> StreamQuerySpec:
    """A spec running the built-in `plan`, one source of four partitions per input name."""
    return q5_spec(
        plan={"builtin": plan},
        sources=[{"name": s, "topic": s, "partitions": 4} for s in sources],
        sinks=[{"name": "out", "topic": "out"}],
        parallelism=parallelism,
    )
