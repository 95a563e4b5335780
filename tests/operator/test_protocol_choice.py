"""The operator asks the engine's `capability` what a protocol can do: an explicit protocol it
refuses is refused before any pod starts, with what to use instead; `auto` never picks one it
refuses (seed queries with ROWS windows included)."""

import pytest
from operator_specs import builtin_spec
from streamshift_engine.migration import capability
from streamshift_engine.plan import builtin
from streamshift_operator.migration.target import Refused, resolve
from streamshift_operator.models.migration import MigrationSpec, Protocol
from streamshift_operator.models.streamquery import StreamQuerySpec
from streamshift_operator.streamquery.decide import initial_status

SOURCES = {"q2": ["S"], "q3": ["S", "T"], "nexmark-q7": ["bid"], "smq": ["numbers"]}


def query(plan: str) -> StreamQuerySpec:
    return builtin_spec(plan, SOURCES[plan], 1)


def move(protocol: str) -> MigrationSpec:
    return MigrationSpec.model_validate(
        {"queryRef": {"name": "q"}, "protocol": protocol, "target": {"moveInstances": [0]}}
    )


@pytest.mark.parametrize("plan", sorted(SOURCES))
@pytest.mark.parametrize("protocol", [p for p in Protocol if p is not Protocol.AUTO])
def test_the_operator_refuses_exactly_what_the_engine_refuses(
    plan: str, protocol: Protocol
) -> None:
    spec = query(plan)
    refusal = capability.refusal(str(protocol), builtin(plan))
    if refusal is None:
        assert resolve(move(protocol), spec, initial_status(spec), 0).protocol is protocol
        return
    with pytest.raises(Refused) as refused:
        resolve(move(protocol), spec, initial_status(spec), 0)
    assert str(refused.value) == refusal
    assert "use " in refusal


@pytest.mark.parametrize("plan", sorted(SOURCES))
def test_auto_never_picks_a_protocol_the_engine_refuses(plan: str) -> None:
    spec = query(plan)
    chosen = resolve(move("auto"), spec, initial_status(spec), 1_000)
    assert capability.refusal(str(chosen.protocol), builtin(plan)) is None
    assert chosen.reason


def test_unimico_hands_the_seed_rows_queries_over_and_auto_picks_it() -> None:
    for plan in ("q2", "q3"):
        spec = query(plan)
        assert resolve(move("auto"), spec, initial_status(spec), 0).protocol is Protocol.UNIMICO
        assert resolve(move("unimico"), spec, initial_status(spec), 0).protocol is Protocol.UNIMICO
