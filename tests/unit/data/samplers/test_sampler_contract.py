"""What every registered sampler promises: new corpus, input untouched, deterministic, a note, train only."""

import copy

import pytest

from nerplat.config.trial import Component
from nerplat.data.samplers import SAMPLERS, apply_samplers

PARAMS = {
    "low_resource": {"size": 30},
    "entity_ratio": {"size": 60, "ratio": 0.1},
    "fraction": {"f": 0.25},
    "single_type": {"type": "PER"},
    "untyped": {},
    "sc": {},
    "scr": {"formula": "reference_code"},
    "scrd": {},
    "nscrd": {},
    "balanced_undersampling": {},
    "augmentation": {},
    "matched_steps": {"to": ["sc"]},
}
LABEL_MAPS = {"single_type", "untyped"}


def test_every_registered_sampler_is_covered_here():
    assert set(SAMPLERS.names()) <= set(PARAMS)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_contract(name, small_conll):
    if name not in SAMPLERS:
        pytest.skip(f"{name} is not registered")
    before = copy.deepcopy(small_conll)
    chain = [Component(name=name, params=PARAMS[name])]
    first = apply_samplers(small_conll, chain, seed=3, partition=1)
    assert small_conll == before  # never mutated
    assert first is not small_conll and first.train != small_conll.train
    assert first == apply_samplers(small_conll, chain, seed=3, partition=1)  # deterministic
    assert first.notes[:-1] == before.notes and first.notes[-1].startswith(name)
    if name not in LABEL_MAPS:
        assert (first.dev, first.test) == (small_conll.dev, small_conll.test)
    else:
        assert first.dev != small_conll.dev and len(first.dev) == len(small_conll.dev)


def test_only_low_resource_is_partitioned():
    partitioned = {name for name in SAMPLERS.names() if SAMPLERS.get(name).config.partitioned}
    assert partitioned == {"low_resource"}


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_configs_forbid_unknown_keys_and_describe_every_field(name):
    if name not in SAMPLERS:
        pytest.skip(f"{name} is not registered")
    config = SAMPLERS.get(name).config
    assert all(field.description for field in config.model_fields.values())
    assert SAMPLERS.config(name, PARAMS[name]) == config.model_validate(PARAMS[name])
