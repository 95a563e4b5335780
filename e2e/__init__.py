"""The demo drivers (`demo`, `compare`, `compare_plot`), run by dev/demo.sh as `python -m e2e.demo`
from the repository root, and the kind end-to-end run (`kind/`, shell)."""
