"""streamshift's stream engine: events, query plans, operators, migration protocols, worker runtime.

Imports no Kubernetes code; the operator depends on it, never the reverse.
"""
