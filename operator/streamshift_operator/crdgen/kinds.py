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
from streamshift_operator.resources.names import QUERY_NAME_MAX, QUERY_NAME_PATTERN

Column = tuple[str, str, str] | tuple[str, str, str, int]  # name, type, path[, priority]


@dataclass(frozen=True)
class Kind:
    kind: str
    plural: str
    short_name: str
    spec: type[BaseModel]
    status: type[BaseModel]
    description: str
    columns: tuple[Column, ...]
    scale: dict[str, str] | None = None
    name_rules: tuple[JsonDict, ...] = ()


AGE: Column = ("Age", "date", ".metadata.creationTimestamp")

STREAM_QUERY = Kind(
    kind="StreamQuery",
    plural="streamqueries",
    short_name="sq",
    spec=StreamQuerySpec,
    status=StreamQueryStatus,
    description="A continuous query (a plan over Kafka topics) run by one worker pod per "
    "instance; move or rescale it with a Migration.",
    columns=(
        ("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
        ("Phase", "string", ".status.phase"),
        ("Instances", "string", ".status.readyInstances"),
        ("Recommended", "integer", ".status.autoscaler.recommendedParallelism"),
        ("Watermark Lag", "integer", ".status.watermarkLagSeconds"),
        ("Input Lag", "integer", ".status.lag"),
        ("Last Migration", "string", ".status.lastMigration.name"),
        ("Verified", "boolean", ".status.lastMigration.verified"),
        AGE,
        ("Plan", "string", ".spec.plan.builtin", 1),
        ("Message", "string", ".status.message", 1),
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
    description="Moves or rescales one StreamQuery (or changes its plan) by a migration "
    "protocol, optionally verifying the output against a run without migration.",
    columns=(
        ("Query", "string", ".spec.queryRef.name"),
        ("Protocol", "string", ".status.protocol"),
        ("Phase", "string", ".status.phase"),
        ("Duration", "number", ".status.cost.durationSeconds"),
        ("Gap", "number", ".status.cost.outputGapSeconds"),
        ("Verified", "string", '.status.conditions[?(@.type=="Verified")].status'),
        AGE,
        ("Requested", "string", ".spec.protocol", 1),
        ("Message", "string", ".status.message", 1),
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
        "description": kind.description,
        "properties": {
            "apiVersion": {"type": "string", "description": f"{GROUP}/{VERSION}"},
            "kind": {"type": "string", "description": kind.kind},
            "metadata": {"type": "object"},  # the API server's ObjectMeta: nothing else allowed
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
                    "additionalPrinterColumns": [_column(column) for column in kind.columns],
                }
            ],
        },
    }


def _column(column: Column) -> dict[str, Any]:
    """A printer column; priority 1 shows only with `kubectl get -o wide`."""
    name, type_, path, *priority = column
    entry: dict[str, Any] = {"name": name, "type": type_, "jsonPath": path}
    if priority:
        entry["priority"] = priority[0]
    return entry
