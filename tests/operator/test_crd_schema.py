"""The structural converter: every node typed, no refs or unions, free-form plans preserved."""

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from streamshift_operator.crdgen.kinds import KINDS, crd
from streamshift_operator.crdgen.structural import structural
from streamshift_operator.models.streamquery import PlanSource


def _nodes(node: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = [(path, node)]
    for name, child in node.get("properties", {}).items():
        found += _nodes(child, f"{path}.{name}")
    if "items" in node:
        found += _nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        found += _nodes(node["additionalProperties"], f"{path}{{}}")
    return found


def _fields(node: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every object property (a field `kubectl explain` shows), at any depth."""
    return [
        (f"{parent}.{name}", child)
        for parent, each in _nodes(node, path)
        for name, child in each.get("properties", {}).items()
    ]


def _has_null(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_null(v) for v in value.values())
    return value is None


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.kind)
def test_every_node_is_structural(kind: Any) -> None:
    root = crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for path, node in _nodes(root):
        assert "type" in node, path
        assert not {"$ref", "anyOf", "oneOf", "allOf", "title"} & node.keys(), path
        assert not _has_null(node.get("default", "")), path
        assert not ("properties" in node and "additionalProperties" in node), path


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.kind)
def test_every_field_has_a_description(kind: Any) -> None:
    """`kubectl explain` prints each field's description: none may be empty."""
    root = crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    fields = _fields(root, kind.kind)
    undocumented = [
        path
        for path, node in fields
        if not node.get("description", "").strip() and path != f"{kind.kind}.metadata"
    ]  # metadata is ObjectMeta, documented by the API server (a CRD may not describe it)
    assert undocumented == []
    assert root["description"].strip()
    assert len(fields) > 40  # the walk reaches nested objects and list items


def test_the_walk_finds_an_undocumented_field() -> None:
    class Inner(BaseModel):
        """Documented object."""

        model_config = ConfigDict(use_attribute_docstrings=True)
        bare: int = 0

    class Outer(BaseModel):
        """Documented root."""

        model_config = ConfigDict(use_attribute_docstrings=True)

        inner: list[Inner] = []
        """Documented list."""

    fields = _fields(structural(Outer))
    assert [path for path, node in fields if "description" not in node] == [".inner[].bare"]


def test_inline_plan_keeps_unknown_fields_and_has_the_one_of_rule() -> None:
    schema = structural(PlanSource)
    inline = schema["properties"]["inline"]
    assert inline.pop("description").startswith("A plan object")
    assert inline == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert schema["x-kubernetes-validations"][0]["rule"] == "has(self.builtin) != has(self.inline)"


def test_a_union_of_two_types_is_refused() -> None:
    class Bad(BaseModel):
        value: int | str

    with pytest.raises(ValueError, match="unions"):
        structural(Bad)
