"""Which partitions each instance owns: contiguous ranges, as Flink assigns key groups.

Instance `i` of `n` owns partitions `[ceil(i*p/n), ceil((i+1)*p/n))` of `p`. Every partition has
exactly one owner, ranges differ in size by at most one, and the result depends only on
`(p, n)`, so the operator recomputes the same assignment after a restart.
"""


def assign(partitions: int, parallelism: int) -> list[list[int]]:
    """The partitions of each instance, instance 0 first."""
    if parallelism < 1 or partitions < parallelism:
        raise ValueError(
            f"cannot spread {partitions} partitions over {parallelism} instances: "
            "parallelism must be between 1 and the partition count"
        )
    bounds = [-(-i * partitions // parallelism) for i in range(parallelism + 1)]
    return [list(range(bounds[i], bounds[i + 1])) for i in range(parallelism)]
