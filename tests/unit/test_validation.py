import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nerplat.errors import UserInputError
from nerplat.validation import dotted_path, located_problems, validated


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int = Field(gt=0)
    partitions: int = 1


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: list[Inner]


def test_paths_are_dotted_with_list_items_in_brackets():
    assert dotted_path("", ("steps", 0, "size")) == "steps[0].size"
    assert dotted_path("samplers[1]", ("size",)) == "samplers[1].size"
    assert dotted_path("", ()) == ""


def test_every_error_is_one_located_problem_naming_what_and_the_value():
    with pytest.raises(ValidationError) as caught:
        Outer.model_validate({"steps": [{"size": 0}, {"size": 2, "sise": 3}]})
    problems = located_problems(caught.value, Outer, at="spec", what="sampler 'x'", source="plan.json")
    assert [(p.path, p.message) for p in problems] == [
        ("spec.steps[0].size", "sampler 'x': input should be greater than 0 (got 0)"),
        ("spec.steps[1].sise", "unknown key 'sise' in sampler 'x'; did you mean 'size'? (allowed: size, partitions)"),
    ]
    assert {p.source for p in problems} == {"plan.json"}


def test_validated_returns_the_model_or_raises_every_problem_at_once():
    assert validated(Inner, {"size": 3}).size == 3
    with pytest.raises(UserInputError) as caught:
        validated(Inner, {"partitions": "many"}, at="low_resource")
    assert [p.path for p in caught.value.problems] == ["low_resource.size", "low_resource.partitions"]
    assert caught.value.problems[0].message == "missing required key 'size'"


def test_a_long_value_is_quoted_cut_short():
    with pytest.raises(ValidationError) as caught:
        Inner.model_validate({"size": "x" * 1_000_000})
    [problem] = located_problems(caught.value, Inner)
    assert problem.message.startswith("input should be a valid integer, unable to parse string as an integer (got 'xxx")
    assert "..." in problem.message and len(problem.message) < 200
