"""Benchmarks (`make bench-engine`, ...); numeric libraries single-threaded before numpy loads."""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
