"""streamshift's Kubernetes operator: CRD models, kopf handlers, reconcile logic, pod builders."""
