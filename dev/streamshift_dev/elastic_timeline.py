"""What an elastic run's timeline says (pure): the figures of `make bench-autoscaler` and
`make demo-elastic` from the samples the scenario took once a second and the rescales the
autoscaler's Migrations record.

- recover-s: seconds from the step up to the first sample, once the scale-up Migration has
  handed over to the new instances, with the lag under the tolerance and staying under it
  while the high load lasts (the load is met again at the new parallelism). The hand-off, not
  the Migration's end: its Finalizing phase then records the cost and verifies the output (on
  this machine for 70-90 s), while the new instances already run the query;
- rescales per direction, and the parallelism chosen for the high load (the highest target of
  a scale-up begun while it lasted);
- the workers at the target: the fewest instances whose measured capacity holds the high load
  at the target utilization (what the autoscaler is expected to choose; the bench's optimum
  is measured by a sweep, `elastic_sweep`);
- gap ratio: each rescale's output gap over the output rhythm before it (the Migration's
  recorded `outputGapSeconds` / `outputGapBeforeSeconds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from streamshift_operator.autoscaler.decision import instances_for


@dataclass(frozen=True)
class Sample:
    """The run at one moment, `t` seconds after the load began."""

    t: float
    rate_in: float
    """Input records per second produced over the last second."""
    processed: int
    """Input records read by the query so far (produced less the lag)."""
    lag_records: int
    lag_seconds: float
    parallelism: int
    migration: str = ""
    """The live Migration of the query and its phase ("name phase"), or empty."""
    autoscaler: str = ""
    """The autoscaler's last decision: action, recommended parallelism, true rate used."""


@dataclass(frozen=True)
class Rescale:
    """One of the autoscaler's Migrations, as its status records it."""

    name: str
    started: float
    """Seconds after the load began that it was first seen live."""
    ended: float | None
    """When it was first seen terminal, if it was."""
    from_parallelism: int
    to_parallelism: int
    protocol: str
    phase: str
    gap_s: float | None
    gap_before_s: float | None
    exact: bool | None
    """Its own verification (`status.verification.exact`), if done."""
    handed_over: float | None = None
    """When it was first seen handed over (in Finalizing, or ended Succeeded), if it was."""

    @property
    def up(self) -> bool:
        return self.to_parallelism > self.from_parallelism

    @property
    def gap_ratio(self) -> float | None:
        if self.gap_s is None or not self.gap_before_s:
            return None
        return self.gap_s / self.gap_before_s


def recover_seconds(
    samples: Sequence[Sample],
    step_up: float,
    rescales: Sequence[Rescale],
    tolerance_s: float,
    until: float | None = None,
) -> float | None:
    """Seconds from `step_up` to the first sample, at or after the hand-off of the first
    successful scale-up begun after it (its end if no hand-off was seen), with the lag under
    `tolerance_s` after the last sample before `until` (the step down) with the lag beyond it;
    None without such a scale-up or sample."""
    ups = [
        r.handed_over if r.handed_over is not None else r.ended
        for r in rescales
        if r.up and r.phase == "Succeeded" and r.started >= step_up and r.ended is not None
    ]
    landed = min((t for t in ups if t is not None), default=None)
    if landed is None:
        return None
    after = [s for s in samples if s.t >= landed]
    over = [
        i
        for i, s in enumerate(after)
        if s.lag_seconds >= tolerance_s and (until is None or s.t < until)
    ]
    for sample in after[over[-1] + 1 if over else 0 :]:
        if sample.lag_seconds < tolerance_s:
            return sample.t - step_up
    return None


def workers_at_target(high_rate: float, capacity: float, target: float, partitions: int) -> int:
    """The fewest instances of `capacity` records/s each whose share of `high_rate` over
    `partitions` partitions stays at or under `target` of it, the busiest reading
    `ceil(partitions / instances)` of them (as the autoscaler sizes, `decision.instances_for`)."""
    return instances_for(high_rate / (capacity * target) - 1e-9, partitions)


def chosen(
    samples: Sequence[Sample], rescales: Sequence[Rescale], step_up: float, step_down: float
) -> int:
    """The parallelism chosen for the high load: the highest target of a scale-up begun while
    it lasted (it may end after it), else the highest parallelism while it lasted."""
    targets = [r.to_parallelism for r in rescales if r.up and step_up <= r.started < step_down]
    during = [s.parallelism for s in samples if step_up <= s.t < step_down]
    return max(targets or during or [0])


def gap_ratio_max(rescales: Sequence[Rescale]) -> float | None:
    """The largest gap ratio among the rescales that recorded one."""
    ratios = [r.gap_ratio for r in rescales if r.gap_ratio is not None]
    return max(ratios, default=None)


def max_lag_after(samples: Sequence[Sample], since: float) -> float:
    """The highest lag in seconds from `since` on (the step down: it should not grow)."""
    return max((s.lag_seconds for s in samples if s.t >= since), default=0.0)


def final_line(
    recover: float | None,
    rescales: Sequence[Rescale],
    chosen_parallelism: int,
    optimum_parallelism: int,
    ratio: float | None,
    exact: bool,
) -> str:
    """`autoscaler recover-s=N rescales-up=N rescales-down=N chosen=N optimum=N
    gap-ratio-max=R exact=B` (-1 and nan for what was not measured)."""
    up = sum(1 for r in rescales if r.up)
    down = len(rescales) - up
    recover_text = "-1" if recover is None else f"{recover:.0f}"
    ratio_text = "nan" if ratio is None else f"{ratio:.2f}"
    return (
        f"autoscaler recover-s={recover_text} rescales-up={up} rescales-down={down} "
        f"chosen={chosen_parallelism} optimum={optimum_parallelism} "
        f"gap-ratio-max={ratio_text} exact={str(exact).lower()}"
    )
