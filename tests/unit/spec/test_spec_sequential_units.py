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
