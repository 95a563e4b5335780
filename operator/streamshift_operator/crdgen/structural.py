"""Turn a pydantic JSON schema into a Kubernetes structural OpenAPI v3 schema.

Structural means: every node has a type, no `$ref`, no `anyOf` of types, no `additionalProperties`
beside `properties`. So references are inlined, `X | None` becomes plain `X` (absence is how
Kubernetes says "unset"), `None` defaults and null fields inside defaults are dropped, titles
are dropped, a free-form object (`dict[str, Any]`) becomes
`x-kubernetes-preserve-unknown-fields`, and descriptions (the models' docstrings) are joined into
one line each.
"""

from typing import Any

from pydantic import BaseModel

Schema = dict[str, Any]

_DROPPED = frozenset({"title", "$defs", "additionalProperties"})


def structural(model: type[BaseModel]) -> Schema:
    """The structural schema of a model, with aliases (camelCase) as property names."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs: dict[str, Schema] = raw.get("$defs", {})
    return _convert(raw, defs)


def _convert(node: Schema, defs: dict[str, Schema]) -> Schema:
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _convert(merged, defs)
    options = node.get("anyOf")
    if options is not None:
        present = [option for option in options if option.get("type") != "null"]
        if len(present) != 1:
            raise ValueError(f"only `X | None` unions are structural, got {options}")
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        return _convert({**present[0], **rest}, defs)
    out: Schema = {}
    for key, value in node.items():
        if key in _DROPPED or (key == "default" and value is None):
            continue
        if key == "properties":
            out[key] = {name: _convert(child, defs) for name, child in value.items()}
        elif key == "items":
            out[key] = _convert(value, defs)
        elif key == "default":
            out[key] = _without_nulls(value)
        elif key == "description":
            out[key] = " ".join(value.split())  # a docstring's line breaks are not the text's
        else:
            out[key] = value
    if node.get("additionalProperties") is True and "properties" not in node:
        out["x-kubernetes-preserve-unknown-fields"] = True
    elif isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = _convert(node["additionalProperties"], defs)
    if "type" not in out and "enum" in out:
        out["type"] = "string"
    if "type" not in out:
        raise ValueError(f"schema node without a type: {node}")
    return out


def _without_nulls(value: Any) -> Any:
    """A default as Kubernetes wants it: unset fields absent rather than null."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value
