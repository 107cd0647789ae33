import pytest

from nerplat.config.trial import Component, DatasetRef, TrialConfig
from nerplat.track.params import MAX_KEY_LENGTH, MAX_VALUE_LENGTH, flatten_params, param_key, param_value


def test_trial_config_flattens_to_readable_dotted_names():
    config = TrialConfig(
        dataset=DatasetRef(name="conll2003"),
        samplers=(Component(name="untyped"), Component(name="low_resource", params={"size": 100})),
        objective=Component(name="mom", params={"lambda": 0.25, "base": "ce"}),
    )
    flat = flatten_params(config)
    assert flat["objective"] == "mom"
    assert flat["objective.lambda"] == "0.25"
    assert flat["objective.base"] == "ce"
    assert flat["train.lr"] == "5e-05"
    assert flat["samplers.0"] == "untyped"
    assert flat["samplers.1"] == "low_resource"
    assert flat["samplers.1.size"] == "100"
    assert flat["head"] == "softmax"
    assert flat["dataset.name"] == "conll2003"
    assert all(isinstance(value, str) for value in flat.values())


def test_nested_mappings_and_scalar_lists():
    flat = flatten_params({"a": {"b": {"c": 1}}, "sizes": [20, 50], "ratio": (0.1, 0.2), "flag": True, "none": None})
    assert flat == {"a.b.c": "1", "sizes": "[20, 50]", "ratio": "[0.1, 0.2]", "flag": "True", "none": "None"}


def test_flattening_is_deterministic():
    config = {"x": {"y": [1, 2]}, "z": "long" * 5000}
    assert flatten_params(config) == flatten_params(config)


def test_long_values_are_cut_to_mlflow_limit_with_their_length():
    value = param_value("v" * 10_000)
    assert len(value) == MAX_VALUE_LENGTH
    assert "10000 chars" in value
    assert param_value("short") == "short"


def test_keys_are_made_valid_for_mlflow():
    assert param_key("sampler.weights[PER]") == "sampler.weights_PER_"
    long_key = param_key("k" * 400)
    assert len(long_key) <= MAX_KEY_LENGTH
    assert long_key != param_key("k" * 401)


def test_keys_colliding_after_cleaning_are_refused():
    with pytest.raises(ValueError, match="both flatten"):
        flatten_params({"a+b": 1, "a_b": 2})


def test_a_bare_scalar_is_not_a_config():
    with pytest.raises(TypeError):
        flatten_params(3)
