"""Clients of what the operator talks to: Kubernetes, the workers' control API, Kafka, Events."""
