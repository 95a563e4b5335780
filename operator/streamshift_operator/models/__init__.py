"""Typed models of the streamshift.io/v1alpha1 resources: the one source of the CRDs."""
