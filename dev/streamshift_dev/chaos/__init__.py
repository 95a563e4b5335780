"""`make chaos` (`bench.chaos`): faults injected while a query runs on the local stack, each
scenario's output checked against the in-process reference."""
