"""An arm's replicate unit: partitions when its sampler defines several, else seeds."""

from types import SimpleNamespace

from nerplat.plan.model import Replicate
from nerplat.plan.units import arm_units, partitioned, unit_replicates


def _arm(partitions: int, seeds: int) -> SimpleNamespace:
    parts = tuple(range(partitions))
    return SimpleNamespace(
        partitions=parts, replicates=tuple(Replicate(seed=s, partition=p) for p in parts for s in range(seeds))
    )


def test_a_partitioned_arm_counts_partitions_and_takes_every_seed_of_each():
    arm = _arm(partitions=5, seeds=2)
    assert partitioned(arm) and arm_units(arm) == (0, 1, 2, 3, 4)
    assert {(r.partition, r.seed) for r in unit_replicates(arm, 2)} == {(0, 0), (0, 1), (1, 0), (1, 1)}


def test_an_arm_of_one_partition_counts_seeds():
    arm = _arm(partitions=1, seeds=4)
    assert not partitioned(arm) and arm_units(arm) == (0, 1, 2, 3)
    assert [r.seed for r in unit_replicates(arm, 3)] == [0, 1, 2] and len(unit_replicates(arm, 99)) == 4
