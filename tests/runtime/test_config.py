"""Worker configuration from env: the operator's names, the plan as text, errors naming settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamshift_engine.plan.builtin import builtin, q2
from streamshift_engine.plan.parse import plan_document
from streamshift_engine.runtime.config import ConfigError, load

S = json.dumps([{"name": "S", "topic": "s", "partitions": 4}])

ENV = {
    "STREAMSHIFT_QUERY": "q5",
    "STREAMSHIFT_NAMESPACE": "team-a",
    "STREAMSHIFT_INSTANCE": "1",
    "STREAMSHIFT_EPOCH": "3",
    "STREAMSHIFT_PARTITIONS": "3,1",
    "STREAMSHIFT_PLAN": "{builtin: nexmark-q5}",
    "STREAMSHIFT_SOURCES": json.dumps([{"name": "bid", "topic": "b", "partitions": 4}]),
    "STREAMSHIFT_SINKS": json.dumps([{"name": "out", "topic": "q5-out", "partitions": 2}]),
    "STREAMSHIFT_KAFKA_BOOTSTRAP": "127.0.0.1:9092",
    "STREAMSHIFT_S3_ENDPOINT": "http://127.0.0.1:9000",
    "STREAMSHIFT_S3_BUCKET": "snapshots",
    "STREAMSHIFT_S3_PREFIX": "team-a/q5/",
    "STREAMSHIFT_S3_ACCESS_KEY": "key",
    "STREAMSHIFT_S3_SECRET_KEY": "secret",
    "STREAMSHIFT_CONTROL_TOKEN": "token",
    "POD_IP": "127.0.0.2",
}


def test_operator_env_gives_the_worker_config() -> None:
    config = load(ENV)
    assert config.plan.name == "nexmark-q5"
    assert config.partitions == (1, 3)
    assert config.writer == "team-a.q5.e3.i1"
    assert config.group == "streamshift.team-a.q5"
    assert (config.s3.endpoint, config.s3.secure) == ("127.0.0.1:9000", False)
    assert config.sinks[0].partitions == 2
    assert config.dead_letter_topic == "q5-out.dead"
    assert (config.control_host, config.control_port) == ("127.0.0.2", 8080)
    assert config.snapshot_interval_s == 30 and config.snapshot_keep == 3
    assert (config.commit_interval_s, config.output_commit_interval_s) == (0.5, 0.1)
    assert config.arena_cache_bytes == 64 << 20
    assert load({**ENV, "STREAMSHIFT_ARENA_CACHE_MB": "0"}).arena_cache_bytes == 0
    assert not config.hold


def test_the_worker_runs_the_plan_narrowed_to_the_fields_it_reads() -> None:
    config = load(ENV)
    assert dict(config.plan.input("bid").schema) == {"auction": "int", "date_time": "int"}
    assert config.plan.operators == builtin("nexmark-q5").operators
    bid = config.schemas["bid"]
    assert bid.fields == (("auction", "int"), ("date_time", "int"))
    assert {name for name, _ in bid.unread} == set(builtin("nexmark-q5").input("bid").schema) - {
        "auction",
        "date_time",
    }


def test_inline_plan_file_and_config_file(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("builtin: nexmark-q5\n")
    settings = tmp_path / "worker.yaml"
    settings.write_text("STREAMSHIFT_SNAPSHOT_KEEP: 7\nSTREAMSHIFT_START: hold\n")
    env = {k: v for k, v in ENV.items() if k != "STREAMSHIFT_PLAN"}
    config = load(
        {**env, "STREAMSHIFT_PLAN_FILE": str(plan), "STREAMSHIFT_CONFIG_FILE": str(settings)}
    )
    assert config.plan.name == "nexmark-q5" and config.snapshot_keep == 7 and config.hold
    inline = {**ENV, "STREAMSHIFT_PLAN": json.dumps({"inline": q2()}), "STREAMSHIFT_SOURCES": S}
    assert load(inline).plan.name == "q2"


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("STREAMSHIFT_PARTITIONS", "1,x"),
        ("STREAMSHIFT_PARTITIONS", "9"),
        ("STREAMSHIFT_INSTANCE", "-1"),
        ("STREAMSHIFT_PLAN", "{builtin: no-such-query}"),
        ("STREAMSHIFT_PLAN", "[1, 2"),
        ("STREAMSHIFT_SOURCES", json.dumps([{"name": "other", "topic": "t"}])),
        ("STREAMSHIFT_SINKS", "[]"),
        ("STREAMSHIFT_CONTROL_PORT", "70000"),
        ("STREAMSHIFT_SNAPSHOT_INTERVAL_S", "0"),
        ("STREAMSHIFT_INPUT_FORMAT", "xml"),
        ("STREAMSHIFT_START", "later"),
        ("STREAMSHIFT_ARENA_CACHE_MB", "-5"),
        ("STREAMSHIFT_CONTROL_TOKEN", ""),
    ],
)
def test_bad_setting_is_named(setting: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load({**ENV, setting: value})
    assert caught.value.setting == setting
    assert str(caught.value).startswith(f"{setting}: ")


def test_missing_plan_names_the_plan_file() -> None:
    env = {k: v for k, v in ENV.items() if k != "STREAMSHIFT_PLAN"}
    with pytest.raises(ConfigError) as caught:
        load(env)
    assert caught.value.setting == "STREAMSHIFT_PLAN_FILE"


def test_the_plan_version_is_the_computation_not_its_name_or_spelling() -> None:
    document = plan_document(builtin("nexmark-q5"))
    renamed = {**document, "name": "bids-by-auction"}
    versions = {
        load({**ENV, "STREAMSHIFT_PLAN": text}).plan_version
        for text in ("{builtin: nexmark-q5}", json.dumps(document), json.dumps(renamed))
    }
    assert len(versions) == 1
    other = load({**ENV, "STREAMSHIFT_PLAN": "{builtin: nexmark-q2}"})
    assert other.plan_version not in versions
