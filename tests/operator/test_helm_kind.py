"""The kind end-to-end run (e2e/kind/, `make e2e-kind`) as far as it can be checked without
building images or a cluster: the names its parts give one another agree (the tags images.sh
builds, the chart values, the in-cluster Kafka and MinIO, the q5 StreamQuery), its resources are
ones the operator's models accept, the cluster config carries what this VM needs, and the Kafka
image's entrypoint turns its environment into a KRaft configuration."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import yaml
from helm_chart import CHART, container, helm
from streamshift_operator.models.migration import MigrationSpec, Protocol
from streamshift_operator.models.streamquery import StreamQuerySpec
from streamshift_operator.streamquery.plan_check import check_plan

REPO = Path(__file__).resolve().parents[2]
KIND = REPO / "e2e/kind"
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
PINS = dict(re.findall(r"^(\w+)=(\S+)", (REPO / "dev/lib/common.sh").read_text(), re.M))


def documents(name: str) -> list[dict[str, Any]]:
    text = (KIND / name).read_text()
    text = text.replace("@KAFKA_VERSION@", PINS["KAFKA_VERSION"])
    text = text.replace("@MINIO_VERSION@", PINS["MINIO_VERSION"])
    return [d for d in yaml.safe_load_all(text) if d]


def containers(name: str) -> dict[str, dict[str, Any]]:
    found = {}
    for doc in documents(name):
        for c in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
            found[c["name"]] = c
    return found


def built_tags() -> dict[str, str]:
    """images.sh's image variables, expanded with the pinned versions."""
    script = (KIND / "images.sh").read_text()
    pins = {**PINS, "VERSION": VERSION, "DEBIAN_SUITE": "bookworm"}
    tags = {}
    for name, value in re.findall(r"^([A-Z]+)_IMAGE=(\S+)$", script, re.M):
        tags[name.lower()] = re.sub(r"\$(\w+)", lambda m: pins[m.group(1)], value)
    return tags


def test_every_script_parses() -> None:
    for script in [*KIND.glob("*.sh"), *KIND.glob("images/*.sh")]:
        done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert done.returncode == 0, f"{script}: {done.stderr}"


def test_chart_values_name_the_built_images_and_the_infra_services() -> None:
    tags = built_tags()
    assert tags["engine"] == f"localhost/streamshift/engine:{VERSION}"
    done = helm("lint", "--strict", str(CHART), "-f", str(KIND / "values.yaml"))
    assert done.returncode == 0, done.stdout
    done = helm("template", "rel", str(CHART), "-f", str(KIND / "values.yaml"))
    assert done.returncode == 0, done.stderr
    operator = container([d for d in yaml.safe_load_all(done.stdout) if d])
    # pods name the loaded images fully qualified, as podman stores them (a bare name under
    # localhost/); containerd would resolve a bare name to a registry's
    assert operator["image"] == tags["operator"]
    assert operator["imagePullPolicy"] == "Never"
    env = {e["name"]: e.get("value") for e in operator["env"]}
    assert env["STREAMSHIFT_WORKER_IMAGE"] == tags["engine"]
    infra = containers("infra.yaml")
    assert infra["kafka"]["image"] == tags["kafka"] and infra["minio"]["image"] == tags["minio"]
    assert {c["imagePullPolicy"] for c in infra.values()} == {"Never"}
    values = yaml.safe_load((KIND / "values.yaml").read_text())
    advertised = {e["name"]: e["value"] for e in infra["kafka"]["env"]}[
        "KAFKA_ADVERTISED_LISTENERS"
    ]
    assert advertised == f"PLAINTEXT://{values['kafka']['bootstrapServers']}"
    services = {d["metadata"]["name"]: d for d in documents("infra.yaml") if d["kind"] == "Service"}
    assert values["s3"]["endpoint"] == "http://minio.streamshift-infra.svc:9000"
    assert services["minio"]["spec"]["ports"][0]["port"] == 9000
    run = (KIND / "run.sh").read_text()
    for image in ("engine", "spark", "operator"):
        assert f'"localhost/streamshift/{image}:$VERSION"' in run  # loaded into the node


def test_q5_and_every_protocols_migration_are_valid_resources() -> None:
    [query] = documents("q5.yaml")
    spec = StreamQuerySpec.model_validate(query["spec"])
    assert check_plan(spec).problems == ()
    values = yaml.safe_load((KIND / "values.yaml").read_text())
    assert spec.kafka.bootstrap_servers == values["kafka"]["bootstrapServers"]
    assert spec.snapshot.endpoint == values["s3"]["endpoint"]
    run = (KIND / "run.sh").read_text()
    [listed] = re.findall(r"^PROTOCOLS=\((.*)\)$", run, re.M)
    assert sorted(listed.split()) == sorted(p.value for p in Protocol if p is not Protocol.AUTO)
    [template] = re.findall(r"<<YAML\n(.*?)\nYAML", run, re.S)
    for protocol in listed.split():
        migration = yaml.safe_load(template.replace("$protocol", protocol).replace("$NS", "e2e"))
        parsed = MigrationSpec.model_validate(migration["spec"])
        assert parsed.verify is True and parsed.query_ref.name == query["metadata"]["name"]
    source, namespace = spec.sources[0], query["metadata"]["namespace"]
    assert re.search(rf"^NS={namespace}$", run, re.M)
    assert '--topic-prefix "$NS-"' in run and source.topic == f"{namespace}-bid"
    assert f"--partitions {source.partitions}" in run


def test_the_scaled_query_is_keyed_and_reads_what_the_generator_writes() -> None:
    """`kubectl scale` goes to q8: at two instances its plan passes the operator's checks, where
    q5's (global state) does not."""
    run = (KIND / "run.sh").read_text()
    assert "scale streamquery q8 --replicas=2" in run
    for name, scalable in (("q5.yaml", False), ("q8.yaml", True)):
        [query] = documents(name)
        spec = StreamQuerySpec.model_validate({**query["spec"], "parallelism": 2})
        assert (check_plan(spec).problems == ()) is scalable, name
        for source in spec.sources:
            assert source.topic == f"e2e-{source.name}" and source.partitions == 4


def test_cluster_config_has_what_this_vm_needs() -> None:
    config = yaml.safe_load((KIND / "cluster.yaml").read_text())
    assert config["networking"]["disableDefaultCNI"] is True  # the node image has a bridge CNI
    [patch] = config["kubeadmConfigPatches"]
    assert yaml.safe_load(patch) == {"kind": "KubeletConfiguration", "failCgroupV1": False}


def test_kafka_entrypoint_writes_kraft_properties_and_formats_once(tmp_path: Path) -> None:
    """The image's entrypoint with a stand-in `java` that records how it is called."""
    (tmp_path / "java").write_text('#!/bin/sh\necho "$*" >> "$CALLS"\n')
    (tmp_path / "java").chmod(0o755)
    [kafka] = [c for name, c in containers("infra.yaml").items() if name == "kafka"]
    env = {e["name"]: e["value"] for e in kafka["env"]}
    env |= {"KAFKA_CONF_DIR": str(tmp_path), "CALLS": str(tmp_path / "calls")}
    done = subprocess.run(
        ["sh", str(KIND / "images/kafka-entrypoint.sh")],
        env={"PATH": f"{tmp_path}:/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    props = dict(
        line.split("=", 1) for line in (tmp_path / "server.properties").read_text().splitlines()
    )
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == "1@localhost:9093"
    assert props["advertised.listeners"] == "PLAINTEXT://kafka.streamshift-infra.svc:9092"
    assert props["num.partitions"] == "4"
    assert not {"heap.opts", "conf.dir", "cluster.id"} & props.keys()
    format_call, run_call = (tmp_path / "calls").read_text().splitlines()
    assert "kafka.tools.StorageTool format --ignore-formatted" in format_call
    assert "--cluster-id=" in format_call
    assert run_call.startswith("-Xms256m -Xmx512m") and run_call.endswith(
        f"kafka.Kafka {tmp_path}/server.properties"
    )
