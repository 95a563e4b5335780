"""Migration protocols as state machines over engine instances: log, transport, cost model."""
