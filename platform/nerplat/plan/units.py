"""An arm's replicate unit: the partition when its sampler defines more than one (the papers
replicate over partitions, and seeds within a partition are not independent), else the seed.

The runner's looks (`run.looks`) and the claims' design (`analysis.claim_design`) both count
replicates in these units, so they live here, below both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nerplat.plan.model import Arm, Replicate


def partitioned(arm: Arm) -> bool:
    """Whether the arm's unit is the partition (its sampler defines more than one), else the seed."""
    return len(arm.partitions) > 1


def arm_units(arm: Arm) -> tuple[int, ...]:
    """The arm's units in the order looks take them: its replicates' partitions, else their seeds."""
    return tuple(dict.fromkeys(r.partition if partitioned(arm) else r.seed for r in arm.replicates))


def unit_replicates(arm: Arm, units: int) -> tuple[Replicate, ...]:
    """The arm's replicates of its first `units` units: every seed of its first partitions (in
    `arm_units` order, so a narrowed `replicate.partitions` list keeps its own), else its first seeds."""
    wanted = set(arm_units(arm)[:units])
    return tuple(r for r in arm.replicates if (r.partition if partitioned(arm) else r.seed) in wanted)
