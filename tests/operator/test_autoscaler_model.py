"""StreamQuery.spec.autoscaler and status.autoscaler: defaults, and the CRD's validation rules
and printer column."""

from typing import Any

from operator_specs import q5_spec
from streamshift_operator.crdgen.kinds import STREAM_QUERY, crd
from streamshift_operator.models.streamquery import AutoscalerMode, StreamQueryStatus


def schema() -> dict[str, Any]:
    version = crd(STREAM_QUERY)["spec"]["versions"][0]
    root: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return root


def test_an_enabled_autoscaler_gets_its_defaults() -> None:
    spec = q5_spec(autoscaler={"enabled": True, "maxParallelism": 4})
    assert spec.autoscaler is not None
    wire = spec.autoscaler.wire()
    assert wire == {
        "enabled": True,
        "mode": "act",
        "minParallelism": 1,
        "maxParallelism": 4,
        "targetUtilization": 0.7,
        "lagToleranceSeconds": 60,
        "metricWindowSeconds": 30,
        "stabilizationSeconds": 60,
        "scaleDownDelaySeconds": 300,
        "protocol": "auto",
    }
    assert spec.autoscaler.mode is AutoscalerMode.ACT
    assert q5_spec().autoscaler is None


def test_the_bounds_rules_sit_where_they_can_see_the_partitions() -> None:
    spec = schema()["properties"]["spec"]
    spec_rules = " ".join(rule["rule"] for rule in spec["x-kubernetes-validations"])
    assert "self.autoscaler.maxParallelism <= s.partitions" in spec_rules
    assert "self.autoscaler.minParallelism <= s.partitions" in spec_rules
    autoscaler = spec["properties"]["autoscaler"]
    messages = [rule["message"] for rule in autoscaler["x-kubernetes-validations"]]
    assert any("minParallelism must not exceed autoscaler.maxParallelism" in m for m in messages)
    assert any("targetUtilization" in m and "at most 1" in m for m in messages)


def test_the_recommendation_is_a_printer_column_and_the_history_is_bounded() -> None:
    version = crd(STREAM_QUERY)["spec"]["versions"][0]
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns["Recommended"] == ".status.autoscaler.recommendedParallelism"
    status = schema()["properties"]["status"]["properties"]["autoscaler"]
    assert status["properties"]["history"]["maxItems"] == 10
    parsed = StreamQueryStatus.model_validate(
        {"autoscaler": {"recommendedParallelism": 3, "action": "scale-up", "history": []}}
    )
    assert parsed.autoscaler is not None and parsed.autoscaler.recommended_parallelism == 3
