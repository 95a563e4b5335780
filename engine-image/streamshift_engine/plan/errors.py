"""`PlanError`: a plan is invalid, naming the node and the field at fault."""

from __future__ import annotations


class PlanError(ValueError):
    """An invalid plan: `node` is the input or operator id, `field` the offending key."""

    def __init__(self, node: str, field: str, message: str) -> None:
        super().__init__(f"{node}.{field}: {message}")
        self.node = node
        self.field = field
        self.message = message
