"""The output a query must give: `streamshift_dev.reference` (the benchmarks use it too)."""

from streamshift_dev.reference import Inputs, reference

__all__ = ["Inputs", "reference"]
