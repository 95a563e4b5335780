"""The manifests of a StreamQuery's worker pods: their names, labels, partitions and pod spec."""
