"""The CRD files in crds/ are exactly what the models generate."""

from pathlib import Path

import yaml
from streamshift_operator.crdgen.__main__ import main, render
from streamshift_operator.crdgen.kinds import KINDS, file_name

CRDS = Path(__file__).resolve().parents[2] / "crds"


def test_committed_crds_match_the_models() -> None:
    for index, kind in enumerate(KINDS):
        assert (CRDS / file_name(kind)).read_text() == render(index), (
            f"crds/{file_name(kind)} drifted from the models: run `make crds`"
        )


def test_check_mode_reports_a_drifted_file(tmp_path: Path) -> None:
    assert main([str(tmp_path)]) == 0
    assert main(["--check", str(tmp_path)]) == 0
    drifted = tmp_path / file_name(KINDS[1])
    drifted.write_text(drifted.read_text().replace("mig", "mg"))
    assert main(["--check", str(tmp_path)]) == 1


def test_stream_query_crd_has_scale_columns_and_status() -> None:
    crd = yaml.safe_load((CRDS / "streamshift.io_streamqueries.yaml").read_text())
    assert crd["metadata"]["name"] == "streamqueries.streamshift.io"
    assert crd["spec"]["names"]["shortNames"] == ["sq"]
    version = crd["spec"]["versions"][0]
    assert version["name"] == "v1alpha1"
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.parallelism",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }
    columns = [column["name"] for column in version["additionalPrinterColumns"]]
    assert columns == [
        "Ready",
        "Phase",
        "Instances",
        "Recommended",
        "Watermark Lag",
        "Input Lag",
        "Last Migration",
        "Verified",
        "Age",
        "Plan",
        "Message",
    ]
    ready = version["additionalPrinterColumns"][0]
    assert ready["jsonPath"] == '.status.conditions[?(@.type=="Ready")].status'


def test_migration_crd_has_protocol_enum_default_and_columns() -> None:
    crd = yaml.safe_load((CRDS / "streamshift.io_migrations.yaml").read_text())
    assert crd["spec"]["names"]["shortNames"] == ["mig"]
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    protocol = spec["properties"]["protocol"]
    assert protocol["default"] == "auto"
    assert set(protocol["enum"]) == {
        "unimico",
        "parallel-track",
        "moving-state",
        "state-transfer",
        "savepoint-restart",
        "auto",
    }
    assert spec["required"] == ["queryRef", "target"]
    columns = [column["name"] for column in version["additionalPrinterColumns"]]
    assert columns == [
        "Query",
        "Protocol",
        "Phase",
        "Duration",
        "Gap",
        "Verified",
        "Age",
        "Requested",
        "Message",
    ]
    by_name = {c["name"]: c for c in version["additionalPrinterColumns"]}
    assert by_name["Protocol"]["jsonPath"] == ".status.protocol"  # what auto chose
    assert by_name["Requested"] == {
        "name": "Requested",
        "type": "string",
        "jsonPath": ".spec.protocol",
        "priority": 1,
    }
