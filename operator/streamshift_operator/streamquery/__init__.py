"""The StreamQuery controller: observe, decide, act, record status, one reconcile pass."""
