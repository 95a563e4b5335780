"""Types shared by the StreamQuery and Migration models: base model, Secret refs, conditions.

Field names are snake_case in Python and camelCase on the wire (Kubernetes style). Every model
serialises by alias, so `model_dump(by_alias=True)` is what goes to the API server. A field's
docstring (the string under it) is its description in the generated CRD, which `kubectl explain`
prints: every field has one (`tests/operator/test_crd_schema.py` walks the schemas).
"""

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict

GROUP = "streamshift.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
QUANTITY = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


class ApiModel(BaseModel):
    """Base of every CRD model: camelCase aliases, population by either name."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, use_attribute_docstrings=True
    )

    def wire(self) -> dict[str, Any]:
        """The object as the API server stores it: camelCase, unset optionals left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


def cel(rule: str, message: str, field_path: str | None = None) -> JsonDict:
    """One `x-kubernetes-validations` entry; the message says what to fix."""
    entry: JsonDict = {"rule": rule, "message": message}
    if field_path is not None:
        entry["fieldPath"] = field_path
    return entry


class SecretKeyRef(ApiModel):
    """A key in a Secret of the resource's namespace."""

    name: str = Field(max_length=253, pattern=DNS_SUBDOMAIN)
    """The Secret's name."""
    key: str = Field(min_length=1, max_length=253)
    """The key in the Secret's data whose value is used."""


class ConditionStatus(StrEnum):
    """Whether a condition holds: True, False or Unknown."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(ApiModel):
    """A Kubernetes-style condition (metav1.Condition without the generation)."""

    type: str = Field(max_length=64)
    """The condition's kind, such as Ready, Progressing, Degraded or Verified."""
    status: ConditionStatus
    """True, False or Unknown."""
    reason: str = Field(max_length=1024)
    """A CamelCase word saying why the condition has its status."""
    message: str = Field(default="", max_length=32768)
    """A sentence for people: what holds, or what is wrong and what to do."""
    last_transition_time: datetime
    """When the status last changed (not when the condition was last written)."""
