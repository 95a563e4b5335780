"""The autoscaler: DS2-style one-step rescaling decisions for a StreamQuery.

`inputs` holds what a decision reads (the observed load, the user's policy, a pending
scale-down) and `decision` the pure function from them to a decision and its reason; the
reconcile glue observes, calls it, records the result in status and, in `act` mode, creates the
Migration.
"""
