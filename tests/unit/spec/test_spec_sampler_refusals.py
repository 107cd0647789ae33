"""What a sampler setting refuses of its corpus is found at validate, at the parameter to change
(issue 62: `plan` accepted a `low_resource` size that `train` refused once it had read the corpus)."""

from dataclasses import replace
from pathlib import Path

import pytest
from spec_testing import fake_catalog, spec_problems

from nerplat.data.samplers import SAMPLERS
from nerplat.spec.validate import load_spec

TINY = Path(__file__).parents[2] / "fixtures" / "corpora" / "tiny"  # 4 train sentences, types LOC, ORG, PER
HEAD = f"experiment: t\ndataset: {{path: '{TINY}'}}\nmethods: {{ce: {{loss: ce}}}}\n"


@pytest.fixture
def real_samplers():
    return replace(fake_catalog(), samplers=SAMPLERS)


def test_a_size_beyond_the_train_split_is_refused_at_its_parameter_with_the_count(real_samplers, write_spec):
    text = HEAD + "samplers:\n  - untyped\n  - low_resource: {size: 5, partitions: 2}\n"
    found = spec_problems(real_samplers, write_spec, text, dataset_check=lambda ref: [])
    assert found == [(
        "samplers[1].low_resource.size", 6,
        f"low_resource: asked for 5 sentences but the train split of '{TINY}' has only 4: set size to at most 4",
    )]


def test_each_refused_setting_of_a_sweep_or_of_alternatives_is_named_alone(real_samplers, write_spec):
    text = HEAD + "samplers:\n  - [{low_resource: {size: [4, 9]}}]\n  - [{single_type: {type: PRE}}]\n"
    found = spec_problems(real_samplers, write_spec, text, dataset_check=lambda ref: [])
    assert [(path, line) for path, line, _ in found] == [
        ("samplers[0][0].low_resource.size", 5), ("samplers[1][0].single_type.type", 6),
    ]
    assert "asked for 9 sentences" in found[0][2] and "has no type 'PRE'; did you mean 'PER'?" in found[1][2]


def test_what_the_corpus_meets_validates_and_without_a_dataset_check_nothing_is_read(real_samplers, write_spec):
    assert load_spec(write_spec(HEAD + "samplers: [{low_resource: {size: 4}}]\n"), real_samplers, lambda ref: [])
    assert load_spec(write_spec(HEAD + "samplers: [{low_resource: {size: 9}}]\n"), real_samplers)
