import pytest

from nerplat.config.trial import Component
from nerplat.data.samplers import apply_samplers
from nerplat.data.samplers.chain import SamplerRefusal
from nerplat.data.samplers.low_resource import LowResourceConfig
from nerplat.errors import UserInputError


def test_chains_apply_in_order_and_record_the_sampled_checksum(small_conll):
    chain = [Component(name="untyped"), Component(name="low_resource", params={"size": 50})]
    sampled = apply_samplers(small_conll, chain, seed=0, partition=4)
    assert len(sampled.train) == 50 and sampled.labels() == ["O", "B-ENT", "I-ENT"]
    assert [n.split(":")[0] for n in sampled.notes] == ["untyped", "low_resource(size=50, partitions=10)"]
    assert sampled.checksums["train"] == small_conll.checksums["train"]  # the source stays identified
    assert "train_sampled" in sampled.checksums and "train_sampled" not in small_conll.checksums
    resampled_low = apply_samplers(sampled, [Component(name="sc")], seed=0, partition=4)
    assert len(resampled_low.train) > 50


def test_empty_chain_is_the_identity(small_conll):
    assert apply_samplers(small_conll, [], seed=0, partition=0) == small_conll


def test_every_bad_component_is_reported_before_anything_runs(small_conll):
    chain = [
        Component(name="untypd"),
        Component(name="low_resource", params={"size": -1, "extra": 1}),
        Component(name="sc", params={"formula": "papers"}),
    ]
    with pytest.raises(UserInputError) as caught:
        apply_samplers(small_conll, chain, seed=0, partition=0)
    paths = [p.path for p in caught.value.problems]
    assert paths == ["samplers[0]", "samplers[1].size", "samplers[1].extra", "samplers[2].formula"]
    messages = " | ".join(p.message for p in caught.value.problems)
    assert "did you mean 'untyped'" in messages and "unknown key 'extra' in sampler 'low_resource'" in messages
    assert "allowed: size, partitions" in messages


def test_a_sampler_that_refuses_its_corpus_names_its_step_and_parameter(small_conll):
    chain = [Component(name="untyped"), Component(name="low_resource", params={"size": len(small_conll.train) + 1})]
    with pytest.raises(SamplerRefusal) as caught:
        apply_samplers(small_conll, chain, seed=0, partition=0)
    assert caught.value.step == 1 and [p.path for p in caught.value.problems] == ["size"]
    assert f"has only {len(small_conll.train)}" in caught.value.problems[0].message


def test_partitioned_is_a_class_flag_not_a_parameter():
    assert LowResourceConfig.partitioned is True
    assert "partitioned" not in LowResourceConfig.model_fields
