"""Development stack on one machine: local Kafka, MinIO, kube-apiserver and the process node agent."""
