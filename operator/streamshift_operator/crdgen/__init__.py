"""CRD generation from the typed models: `python -m streamshift_operator.crdgen` writes crds/."""
