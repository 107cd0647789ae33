"""Building objectives from spec names and parameters; the ClassVars the compiler and optimiser read."""

from __future__ import annotations

import pytest
from objective_fakes import make

from nerplat.errors import UserInputError
from nerplat.objectives import OBJECTIVES, ObjectiveContext
from nerplat.objectives.base import ObjectiveConfig

OPTIMIZERS = {"auc_2t": "pesg", "ova_auc": "pesg", "ova_auc_maml": "pesg", "comauc_2t": "pdsca"}


def test_unknown_objective_suggests_a_name(context):
    with pytest.raises(UserInputError, match="did you mean 'mom'"):
        make("mmo", context)


def test_bad_parameters_are_user_errors_with_their_field(context):
    with pytest.raises(UserInputError) as caught:
        make("focal", context, gamma=-1, form="both", extra=1)
    paths = {problem.path for problem in caught.value.problems}
    assert paths == {"objective.gamma", "objective.form", "objective.extra"}


@pytest.mark.parametrize("entry", OBJECTIVES.entries(), ids=lambda e: e.name)
def test_every_config_declares_heads_and_optimizer(entry):
    config = entry.config
    assert issubclass(config, ObjectiveConfig)
    assert config.default_head in config.heads
    assert config.optimizer == OPTIMIZERS.get(entry.name, "adamw")
    assert entry.summary
    for name, field in config.model_fields.items():
        assert field.description, f"{entry.name}.{name} has no description"
    with pytest.raises(ValueError):
        config.model_validate({"no_such_field": 1})


def test_context_checks_counts_against_labels():
    with pytest.raises(ValueError, match="2 labels but 3"):
        ObjectiveContext(["O", "B-X"], [1, 2, 3], max_length=8)


ROUND_TRIPS = [
    ("mom", {"lambda": 0.3, "base": {"name": "focal", "params": {"gamma": 1.0}}}),
    ("wce", {"scheme": "log_ratio", "beta": 4.0}),
    ("focal", {"form": "one_vs_rest"}),
    ("comauc_2t", {"k": 2, "clip_value": None}),
]


@pytest.mark.parametrize(
    ("name", "params"), [(e.name, {}) for e in OBJECTIVES.entries()] + ROUND_TRIPS, ids=lambda v: str(v)
)
def test_configs_round_trip_through_the_json_dump_the_compiler_makes(name, params, context):
    config = OBJECTIVES.get(name).config
    validated = config.model_validate(params)
    dumped = validated.model_dump(mode="json", by_alias=True)
    assert config.model_validate(dumped) == validated
    make(name, context, **dumped)
