"""One driver per migration protocol: the coordinator's calls to the workers' control API."""
