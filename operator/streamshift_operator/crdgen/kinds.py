"""The two kinds as CustomResourceDefinitions: names, subresources, printer columns, schemas.

Schemas come from the models (`structural`); this module adds only what a CRD carries beside the
schema. `crd(kind)` returns the CRD as a plain dict, ready for YAML or the API server.
"""

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.config import JsonDict

from streamshift_operator.crdgen.structural import Schema, structural
from streamshift_operator.models.common import GROUP, VERSION, cel
from streamshift_operator.models.migration import MigrationSpec, MigrationStatus
from streamshift_operator.models.streamquery import StreamQuerySpec, StreamQueryStatus
from streamshift_operator.names import QUERY_NAME_MAX, QUERY_NAME_PATTERN


@dataclass(frozen=True)
class Kind:
    kind: str
    plural: str
    short_name: str
    spec: type[BaseModel]
    status: type[BaseModel]
    columns: tuple[tuple[str, str, str], ...]
    scale: dict[str, str] | None = None
    name_rules: tuple[JsonDict, ...] = ()


AGE = ("Age", "date", ".metadata.creationTimestamp")

STREAM_QUERY = Kind(
    kind="StreamQuery",
    plural="streamqueries",
    short_name="sq",
    spec=StreamQuerySpec,
    status=StreamQueryStatus,
    columns=(
        ("Query", "string", ".spec.plan.builtin"),
        ("Parallelism", "integer", ".spec.parallelism"),
        ("Phase", "string", ".status.phase"),
        ("Lag", "integer", ".status.lag"),
        AGE,
    ),
    scale={
        "specReplicasPath": ".spec.parallelism",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    },
    name_rules=(
        cel(
            f"self.metadata.name.size() <= {QUERY_NAME_MAX} && "
            f"self.metadata.name.matches('{QUERY_NAME_PATTERN}')",
            f"a StreamQuery's name must be at most {QUERY_NAME_MAX} characters, lower-case "
            "letters, digits and '-', starting with a letter (it prefixes its pods' names)",
        ),
    ),
)

MIGRATION = Kind(
    kind="Migration",
    plural="migrations",
    short_name="mig",
    spec=MigrationSpec,
    status=MigrationStatus,
    columns=(
        ("Query", "string", ".spec.queryRef.name"),
        ("Protocol", "string", ".spec.protocol"),
        ("Phase", "string", ".status.phase"),
        ("Duration", "number", ".status.cost.durationSeconds"),
        ("Gap", "number", ".status.cost.outputGapSeconds"),
        AGE,
    ),
)

KINDS = (STREAM_QUERY, MIGRATION)


def file_name(kind: Kind) -> str:
    return f"{GROUP}_{kind.plural}.yaml"


def crd(kind: Kind) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind."""
    root: Schema = {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": structural(kind.spec),
            "status": structural(kind.status),
        },
    }
    if kind.name_rules:
        root["x-kubernetes-validations"] = list(kind.name_rules)
    subresources: dict[str, Any] = {"status": {}}
    if kind.scale is not None:
        subresources["scale"] = dict(kind.scale)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind.kind,
                "listKind": f"{kind.kind}List",
                "plural": kind.plural,
                "singular": kind.kind.lower(),
                "shortNames": [kind.short_name],
                "categories": ["streamshift"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": root},
                    "subresources": subresources,
                    "additionalPrinterColumns": [
                        {"name": name, "type": type_, "jsonPath": path}
                        for name, type_, path in kind.columns
                    ],
                }
            ],
        },
    }
