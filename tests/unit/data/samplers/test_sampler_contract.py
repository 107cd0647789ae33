"""What every registered sampler promises: new corpus, input untouched, deterministic, a note, train only.

Each sampler runs with every parameter set of its registry entry's `examples`.
"""

import copy

import pytest

from nerplat.config.trial import Component
from nerplat.data.samplers import SAMPLERS, apply_samplers
from nerplat.errors import UserInputError

EXAMPLES = [
    pytest.param(entry.name, params, id=f"{entry.name}-{i}")
    for entry in SAMPLERS.entries()
    for i, params in enumerate(entry.examples)
]


@pytest.mark.parametrize("name,params", EXAMPLES)
def test_contract(name, params, small_conll):
    before = copy.deepcopy(small_conll)
    chain = [Component(name=name, params=params)]
    first = apply_samplers(small_conll, chain, seed=3, partition=1)
    assert small_conll == before  # never mutated
    assert first is not small_conll and first.train != small_conll.train
    assert first == apply_samplers(small_conll, chain, seed=3, partition=1)  # deterministic
    assert first.notes[:-1] == before.notes and first.notes[-1].startswith(name)
    if not SAMPLERS.get(name).config.every_split:
        assert (first.dev, first.test) == (small_conll.dev, small_conll.test)
    else:
        assert first.dev != small_conll.dev and len(first.dev) == len(small_conll.dev)


def test_only_low_resource_is_partitioned():
    partitioned = {name for name in SAMPLERS.names() if SAMPLERS.get(name).config.partitioned}
    assert partitioned == {"low_resource"}


def test_only_label_maps_change_every_split():
    assert {name for name in SAMPLERS.names() if SAMPLERS.get(name).config.every_split} == {"single_type", "untyped"}


@pytest.mark.parametrize("name,params", EXAMPLES)
def test_configs_forbid_unknown_keys_and_describe_every_field(name, params):
    config = SAMPLERS.get(name).config
    assert all(field.description for field in config.model_fields.values())
    assert SAMPLERS.config(name, params) == config.model_validate(params)
    with pytest.raises(UserInputError, match="not_a_field"):
        SAMPLERS.config(name, {**params, "not_a_field": 1})
