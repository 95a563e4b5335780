"""Helpers the test folders share: a bounded wait (`waiting`), Kafka input and a `read_committed`
reader of a query's output (`kafka`), and the in-process engine's expected output (`reference`).
Folder-specific helpers stay in their folder (`runtime/harness.py`, `operator/operator_stack.py`).
"""
