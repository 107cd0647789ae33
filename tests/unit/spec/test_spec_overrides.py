"""`--set KEY=VALUE`: any spec key, validated like the file, located at the flag, part of the resolved spec."""

import pytest

from nerplat.catalog import default_catalog
from nerplat.errors import UserInputError
from nerplat.plan.compiler import compile_plan
from nerplat.spec.overrides import parse_key, parse_overrides
from nerplat.spec.validate import SpecSource, load_spec, validate_spec_file

SPEC = """experiment: overrides
dataset: conll2003
train: {epochs: 6, batch_size: 16}
samplers: [untyped, {low_resource: {size: 100, partitions: 3}}]
methods:
  ce: {loss: ce}
  mom: {loss: mom, base: ce, lambda: {uniform: [0.0, 1.0]}}
tune: {search: tpe, num_samples: 4}
replicate: {seeds: 1}
profiles: {cpu: {train: {epochs: 2}}}
"""


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    return path


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("train.epochs", ("train", "epochs")),
        ("samplers[1].low_resource.size", ("samplers", 1, "low_resource", "size")),
        ("methods.mom.lambda", ("methods", "mom", "lambda")),
        ("a[0][1]", ("a", 0, 1)),
    ],
)
def test_keys_are_yaml_paths(key, path):
    assert parse_key(key) == path


@pytest.mark.parametrize("key", ["", ".x", "[0].a", "a..b", "a[x]"])
def test_malformed_keys_are_none(key):
    assert parse_key(key) is None


def test_values_override_the_file_and_the_profile_and_are_resolved(spec):
    sets = ["train.epochs=3", "methods.mom.lambda=0.3", "samplers[1].low_resource.size=50", "tune=null"]
    plan = compile_plan(SpecSource(spec, "cpu", overrides=sets), default_catalog())
    assert plan.resolved_spec["train"] == {"epochs": 3, "batch_size": 16}
    assert plan.resolved_spec["methods"]["mom"]["lambda"] == 0.3
    mom = plan.arm("conll2003/untyped+low_resource-50/mom")
    assert mom.search_space == {} and mom.fixed["objective"]["params"]["lambda"] == 0.3
    assert mom.fixed["train"]["epochs"] == 3


def test_a_tune_time_budget_reaches_the_plan(spec):
    assert compile_plan(SpecSource(spec, overrides=["tune.time_budget_s=60"]), default_catalog()).tune.time_budget_s == 60
    with pytest.raises(UserInputError, match="greater than 0"):
        compile_plan(SpecSource(spec, overrides=["tune.time_budget_s=0"]), default_catalog())


def test_a_new_key_creates_its_mappings_and_null_removes_one(spec):
    sets = ["methods.focal.loss=focal", "methods.focal.gamma=2", "tune=null", "methods.mom=null"]
    validated = load_spec(SpecSource(spec, overrides=sets), default_catalog())
    assert [m.name for m in validated.methods] == ["ce", "focal"]
    assert validated.tune is None


def test_an_invalid_value_is_located_at_its_flag(spec):
    with pytest.raises(UserInputError) as caught:
        load_spec(SpecSource(spec, overrides=["train.epochs=zero", "methods.mom.lamda=0.3"]), default_catalog())
    by_source = {p.source: p for p in caught.value.problems}
    assert by_source["--set train.epochs=zero"].path == "train.epochs" and by_source["--set train.epochs=zero"].line is None
    assert "did you mean 'lambda'" in by_source["--set methods.mom.lamda=0.3"].message


def test_validate_checks_the_overrides_in_every_profile(spec):
    with pytest.raises(UserInputError) as caught:
        validate_spec_file(SpecSource(spec, overrides=["train.batch_size=0"]), default_catalog())
    assert {p.source for p in caught.value.problems} == {"--set train.batch_size=0"}


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("train.epochs", "expected KEY=VALUE"),
        ("profiles.cpu.train.epochs=1", "cannot be set from the command line"),
        ("train.epochs=[", "invalid YAML: expected the node content"),
    ],
)
def test_malformed_flags_are_refused(assignment, message):
    with pytest.raises(UserInputError, match=message):
        parse_overrides([assignment])


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("samplers[5].x=1", "samplers has 2 items: there is no item [5]"),
        ("experiment.name=x", "experiment is not a mapping"),
    ],
)
def test_a_path_that_cannot_be_followed_names_the_flag(spec, assignment, message):
    with pytest.raises(UserInputError) as caught:
        load_spec(SpecSource(spec, overrides=[assignment]), default_catalog())
    (problem,) = caught.value.problems
    assert message in problem.message and problem.source == f"--set {assignment}"
