"""`replicate.sequential` counts partitions for a partitioned sampler: it may not ask more than the sampler has."""

from nerplat.spec.validate import load_spec
from spec_testing import spec_problems

SPEC = (
    "experiment: t\ndataset: conll2003\n"
    "samplers: [{{low_resource: {{size: 20, partitions: {partitions}}}}}]\n"
    "methods:\n"
    "  ce: {{loss: ce}}\n"
    "  mom: {{loss: mom, lambda: 0.2}}\n"
    "replicate: {{seeds: 9, sequential: {{max_seeds: 9, look_every: 3}}}}\n"
)


def test_a_partitioned_sampler_with_fewer_partitions_than_max_seeds_is_refused_at_max_seeds(catalog, write_spec):
    found = spec_problems(catalog, write_spec, SPEC.format(partitions=3))
    assert [(p, line) for p, line, _ in found] == [("replicate.sequential.max_seeds", 7)], found
    message = found[0][2]
    assert "max_seeds 9 counts partitions" in message and "low_resource-20, which replicates 3" in message
    assert "raise the sampler's partitions to 9 or more" in message and "lower max_seeds to 3" in message


def test_enough_partitions_pass(catalog, write_spec):
    assert load_spec(write_spec(SPEC.format(partitions=10)), catalog).spec.replicate.sequential.max_seeds == 9


def test_max_seeds_below_the_first_look_is_refused_where_plan_would_fail(catalog, write_spec):
    """`max_seeds: 2` validated and `nerplat plan` then raised from `sequential.look_schedule`: the first
    look needs MINIMUM_PAIRS units."""
    from nerplat.analysis.sequential import MINIMUM_PAIRS, look_schedule

    spec = SPEC.format(partitions=10).replace("seeds: 9, sequential: {max_seeds: 9", "seeds: 1, sequential: {max_seeds: 2")
    found = spec_problems(catalog, write_spec, spec)
    assert [p for p, _, _ in found] == ["replicate.sequential.max_seeds"], found
    assert f"the first look needs {MINIMUM_PAIRS} units" in found[0][2] and "raise max_seeds" in found[0][2]
    assert look_schedule(MINIMUM_PAIRS, 1)  # the smallest max_seeds validate lets through, plan accepts
