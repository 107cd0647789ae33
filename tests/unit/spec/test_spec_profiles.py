import pytest

from nerplat.errors import UserInputError
from nerplat.spec.loader import format_path, parse_document
from nerplat.spec.profiles import apply_profile, profile_names
from nerplat.spec.validate import SpecSource, load_spec, validate_spec_file

SPEC = """\
experiment: demo
dataset: conll2003
train: {epochs: 10, batch_size: 32}
methods:
  ce: {loss: ce}
  focal: {loss: focal, gamma: 2.0}
replicate: {seeds: 10}
profiles:
  cpu:
    train: {epochs: 2}
    methods:
      focal: null
    replicate: {seeds: [0, 1]}
  gpu:
    resources: {gpus_per_worker: 1}
"""


def merged(name):
    document, _ = parse_document(SPEC, "x.yaml", {})
    return apply_profile(document, name)


def test_profiles_merge_mappings_replace_values_and_null_removes():
    data = merged("cpu").data
    assert data["train"] == {"epochs": 2, "batch_size": 32}
    assert list(data["methods"]) == ["ce"]
    assert data["replicate"] == {"seeds": [0, 1]}
    assert "profiles" not in data


def test_profile_values_keep_the_profile_lines_and_paths():
    document = merged("cpu")
    line, written_at = document.locate(("train", "epochs"))
    assert (line, format_path(written_at)) == (10, "profiles.cpu.train.epochs")
    line, written_at = document.locate(("train", "batch_size"))
    assert (line, format_path(written_at)) == (3, "train.batch_size")
    assert document.locate(("replicate", "seeds", 1))[0] == 13


def test_without_a_profile_the_profiles_section_is_dropped():
    document = merged(None)
    assert "profiles" not in document.data
    assert not any(path[:1] == ("profiles",) for path in document.locations)


def test_profile_names():
    document, _ = parse_document(SPEC, "x.yaml", {})
    assert profile_names(document) == ["cpu", "gpu"]


def test_an_unknown_profile_lists_the_defined_ones(write_spec, catalog):
    with pytest.raises(UserInputError) as raised:
        load_spec(SpecSource(write_spec(SPEC), "cpuu"), catalog)
    (problem,) = raised.value.problems
    assert problem.message == "unknown profile 'cpuu'; did you mean 'cpu'? (defined: cpu, gpu)"
    assert (problem.path, problem.line) == ("profiles", 8)


def test_an_unknown_profile_when_none_are_defined(write_spec, catalog):
    path = write_spec("experiment: a\ndataset: conll2003\nmethods: {ce: {loss: ce}}\n")
    with pytest.raises(UserInputError, match=r"unknown profile 'cpu' \(defined: none\)"):
        load_spec(SpecSource(path, "cpu"), catalog)


def test_load_spec_applies_the_profile(write_spec, catalog):
    validated = load_spec(SpecSource(write_spec(SPEC), "cpu"), catalog)
    assert validated.profile == "cpu"
    assert [m.name for m in validated.methods] == ["ce"]
    assert validated.seeds == {"full": (0, 1)}
    assert validated.methods[0].train["epochs"] == 2


def test_validating_a_file_checks_the_spec_and_every_profile(write_spec, catalog):
    variants = validate_spec_file(write_spec(SPEC), catalog)
    assert [v.profile for v in variants] == [None, "cpu", "gpu"]
    assert variants[2].spec.resources.gpus_per_worker == 1


def test_a_profile_must_be_a_mapping_and_cannot_nest_profiles(write_spec, catalog):
    text = SPEC.replace("  gpu:\n    resources: {gpus_per_worker: 1}\n", "  gpu: fast\n  nested: {profiles: {a: {}}}\n")
    with pytest.raises(UserInputError) as raised:
        validate_spec_file(write_spec(text), catalog)
    messages = {(p.path, p.message) for p in raised.value.problems}
    assert ("profiles.gpu", "profile 'gpu' must be a mapping of sections to override") in messages
    assert ("profiles.nested.profiles", "a profile cannot define profiles") in messages


def test_base_problems_are_reported_once_not_per_profile(write_spec, catalog):
    text = SPEC.replace("  ce: {loss: ce}", "  ce: {loss: cee}")
    with pytest.raises(UserInputError) as raised:
        validate_spec_file(write_spec(text), catalog)
    assert [p.path for p in raised.value.problems] == ["methods.ce.loss"]
