"""The samplers section: chains, alternatives, sweeps, labels and partitions."""

import pytest

from nerplat.config.trial import Component
from nerplat.errors import UserInputError
from nerplat.spec.validate import load_spec

HEAD = "experiment: t\ndataset: conll2003\nmethods: {ce: {loss: ce}}\n"


def settings(catalog, write_spec, samplers, replicate=""):
    return load_spec(write_spec(HEAD + f"samplers: {samplers}\n" + replicate), catalog)


def labels(catalog, write_spec, samplers):
    return [s.label for s in settings(catalog, write_spec, samplers).samplers]


def problems(catalog, write_spec, samplers, replicate=""):
    with pytest.raises(UserInputError) as raised:
        settings(catalog, write_spec, samplers, replicate)
    return [(p.path, p.message) for p in raised.value.problems]


def test_no_samplers_is_one_setting_named_full(catalog, write_spec):
    (setting,) = load_spec(write_spec(HEAD), catalog).samplers
    assert (setting.label, setting.description, setting.components, setting.partitions) == ("full", "full", (), None)


def test_a_chain_is_one_setting_applied_in_order(catalog, write_spec):
    (setting,) = settings(catalog, write_spec, "[untyped, {low_resource: {size: 100, partitions: 3}}]").samplers
    assert setting.label == "untyped+low_resource-100"
    assert setting.description == "untyped+low_resource(size=100, partitions=3)"
    assert setting.components == (
        Component(name="untyped"), Component(name="low_resource", params={"size": 100, "partitions": 3})
    )
    assert setting.partitions == 3


def test_a_list_on_a_scalar_parameter_sweeps_it(catalog, write_spec):
    found = labels(catalog, write_spec, "[untyped, {low_resource: {size: [20, 50, 100]}}]")
    assert found == ["untyped+low_resource-20", "untyped+low_resource-50", "untyped+low_resource-100"]


def test_several_sweeps_give_every_combination_in_spec_order(catalog, write_spec):
    found = labels(catalog, write_spec, "[{entity_ratio: {size: [100, 200], ratio: [0.01, 0.05]}}]")
    assert found == ["entity_ratio-100-0.01", "entity_ratio-100-0.05", "entity_ratio-200-0.01", "entity_ratio-200-0.05"]


def test_a_list_on_a_list_parameter_is_its_value(catalog, write_spec):
    (setting,) = settings(catalog, write_spec, "[{keep_types: {types: [PER, LOC]}}]").samplers
    assert setting.components[0].params == {"types": ["PER", "LOC"]}
    assert setting.label == "keep_types-PER_LOC"


def test_a_list_of_chains_gives_alternatives(catalog, write_spec):
    found = labels(catalog, write_spec, "[[], [sCR], [{sCR: {formula: reference_code}}], [untyped, {fraction: {f: 0.5}}]]")
    assert found == ["full", "sCR", "sCR-reference_code", "untyped+fraction-0.5"]


def test_labels_do_not_depend_on_the_other_settings(catalog, write_spec):
    alone = labels(catalog, write_spec, "[{low_resource: {size: 100}}]")
    together = labels(catalog, write_spec, "[[{low_resource: {size: 100}}], [{low_resource: {size: 50}}]]")
    assert alone == together[:1] == ["low_resource-100"]


def test_partitioned_samplers_define_replicate_partitions(catalog, write_spec):
    validated = settings(catalog, write_spec, "[[], [{low_resource: {size: 20, partitions: 4}}]]", "replicate: {seeds: 2}\n")
    assert validated.partitions == {"full": (0,), "low_resource-20": (0, 1, 2, 3)}
    narrowed = settings(catalog, write_spec, "[{low_resource: {size: 20, partitions: 4}}]", "replicate: {partitions: 2}\n")
    assert narrowed.partitions == {"low_resource-20": (0, 1)}
    chosen = settings(catalog, write_spec, "[{low_resource: {size: 20, partitions: 4}}]", "replicate: {partitions: [3, 1]}\n")
    assert chosen.partitions == {"low_resource-20": (3, 1)}


@pytest.mark.parametrize(
    ("samplers", "replicate", "path", "message"),
    [
        ("[untypd]", "", "samplers[0]", "unknown sampler 'untypd'; did you mean 'untyped'?"),
        ("[{fraction: {f: 0}}]", "", "samplers[0].fraction.f", "greater than 0 (got 0)"),
        ("[{fraction: {f: [0.5, 1.5]}}]", "", "samplers[0].fraction.f[1]", "less than or equal to 1 (got 1.5)"),
        ("[{fraction: {f: []}}]", "", "samplers[0].fraction.f", "an empty list sweeps no value of f"),
        ("[{fraction: {f: {uniform: [0.1, 0.5]}}}]", "", "samplers[0].fraction.f",
         "sampler 'fraction' is not searched: give f a value; list values (f: [a, b]) for one arm each"),
        ("[{fraction: {f: 0.5, g: 0.5}}]", "", "samplers[0].fraction.g", "unknown key 'g' in sampler 'fraction' (allowed: f)"),
        ("[{low_resource: {}}]", "", "samplers[0].low_resource.size", "missing required key 'size'"),
        ("[{fraction: 0.5}]", "", "samplers[0]", "a sampler is a name or {name: {params}}"),
        ("[{fraction: {f: 0.5}, untyped: null}]", "", "samplers[0]", "a sampler is a name or {name: {params}}"),
        ("[{entity_ratio: {size: 5, ratio: 0.9}}]", "", "samplers[0].entity_ratio",
         "a ratio above 0.5 needs at least 10 sentences"),
        ("[{entity_ratio: {size: [50, 5], ratio: 0.9}}]", "", "samplers[0].entity_ratio.size[1]",
         "a ratio above 0.5 needs at least 10 sentences"),
        ("[[untyped], [untyped]]", "", "samplers[1]", "sampler setting 'untyped' is given twice (also at samplers[0])"),
        ("[{fraction: {f: [0.5, 0.5]}}]", "", "samplers", "sampler setting 'fraction-0.5' is given twice (also at samplers)"),
        ("[untyped]", "replicate: {partitions: 3}\n", "replicate.partitions", "no sampler defines partitions"),
        ("[{low_resource: {size: 5, partitions: 2}}]", "replicate: {partitions: [0, 2]}\n", "replicate.partitions",
         "defines partitions 0..1, not 2"),
        ("[{low_resource: {size: 5, partitions: 2}}]", "replicate: {partitions: 0}\n", "replicate.partitions",
         "partitions must be a count of at least 1"),
        ("untyped", "", "samplers", "input should be a valid list (got 'untyped')"),
    ],
)
def test_bad_samplers_are_located(catalog, write_spec, samplers, replicate, path, message):
    found = problems(catalog, write_spec, samplers, replicate)
    assert len(found) == 1, found
    assert found[0][0] == path
    assert message in found[0][1]


def test_a_method_may_run_with_some_sampler_settings_only(catalog, write_spec):
    text = (
        "experiment: t\ndataset: conll2003\nsamplers: [[], [sCR]]\n"
        "methods:\n  ce: {loss: ce}\n  focal: {loss: focal, samplers: [full]}\n"
    )
    ce, focal = load_spec(write_spec(text), catalog).methods
    assert (ce.samplers, focal.samplers) == (None, ("full",))
    assert "samplers" not in focal.objective.params


def test_a_method_naming_an_unknown_sampler_setting(catalog, write_spec):
    text = "experiment: t\ndataset: conll2003\nsamplers: [[], [sCR]]\nmethods:\n  focal: {loss: focal, samplers: [ful]}\n"
    with pytest.raises(UserInputError) as raised:
        load_spec(write_spec(text), catalog)
    ((path, message),) = [(p.path, p.message) for p in raised.value.problems]
    assert path == "methods.focal.samplers[0]"
    assert message == "unknown sampler setting 'ful'; did you mean 'full'? (settings: full, sCR)"
