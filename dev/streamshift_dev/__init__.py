"""The local stack on one machine: Kafka, MinIO, kube-apiserver, and the process node agent."""
