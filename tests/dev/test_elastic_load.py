"""The reference of a whole autoscaled run, made from its input chunk by chunk: the same events,
and the same results, as from the input made and fed at once."""

from __future__ import annotations

import pytest
from streamshift_dev import elastic_load
from streamshift_dev.reference import reference
from streamshift_engine.nexmark.config import GeneratorConfig

PLAN = "nexmark-q8"
EVENTS = 40_000


def config() -> GeneratorConfig:
    return elastic_load.config(4, elastic_load.events_for(100))


def test_the_chunks_are_the_events_generated_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elastic_load, "FED_CHUNK", 11_000)
    chunks = list(elastic_load.generated_in_chunks(config(), EVENTS))
    whole = elastic_load.generated(config(), EVENTS)
    assert len(chunks) == 4
    for name, batch in whole.items():
        ids = [i for chunk in chunks for i in chunk[name].columns["id"].tolist()]
        assert ids == batch.columns["id"].tolist()
        offsets = [i for chunk in chunks for i in chunk[name].offset.tolist()]
        assert offsets == batch.offset.tolist()
        assert sum(len(chunk[name]) for chunk in chunks) == len(batch)


def test_the_reference_fed_chunk_by_chunk_equals_it_fed_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(elastic_load, "FED_CHUNK", 11_000)
    at_once = reference(PLAN, elastic_load.generated(config(), EVENTS), 4)
    assert at_once  # windows closed: there are results to compare
    assert reference(PLAN, elastic_load.generated_in_chunks(config(), EVENTS), 4) == at_once
