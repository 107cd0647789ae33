"""Hyper-parameters: values, distributions and their checks against the registered config models."""

import pytest

from nerplat.config.search_space import Choice, IntRange, LogUniform, Uniform
from nerplat.errors import UserInputError
from nerplat.spec.validate import load_spec

HEAD = "experiment: t\ndataset: conll2003\n"
TUNE = "tune: {num_samples: 4}\n"


def method(catalog, write_spec, body, extra=TUNE):
    validated = load_spec(write_spec(HEAD + "methods:\n  m: " + body + "\n" + extra), catalog)
    return validated.methods[0]


def problems(catalog, write_spec, body, extra=TUNE):
    with pytest.raises(UserInputError) as raised:
        load_spec(write_spec(HEAD + "methods:\n  m: " + body + "\n" + extra), catalog)
    return [(p.path, p.message) for p in raised.value.problems]


def test_every_distribution_form_becomes_a_search_dimension(catalog, write_spec):
    resolved = method(
        catalog,
        write_spec,
        "{loss: wce, beta: {uniform: [1, 10]}, window: {int: [1, 5]}, scheme: {choice: [inverse, log]}, "
        "train: {lr: {loguniform: [1.0e-5, 1.0e-3]}}}",
    )
    assert resolved.space == {
        "objective.beta": Uniform(low=1, high=10),
        "objective.window": IntRange(low=1, high=5),
        "objective.scheme": Choice(options=("inverse", "log")),
        "train.lr": LogUniform(low=1e-5, high=1e-3),
    }
    assert "beta" not in resolved.objective.params and "lr" not in resolved.train


def test_fixed_parameters_are_complete_with_defaults_and_written_by_alias(catalog, write_spec):
    resolved = method(catalog, write_spec, "{loss: mom, lambda: 0.3}", extra="")
    assert resolved.objective.params == {"lambda": 0.3, "base": "ce"}
    assert resolved.train["epochs"] == 10 and resolved.train["batch_size"] == 32
    assert resolved.space == {}


def test_the_field_name_is_accepted_where_the_model_populates_by_name(catalog, write_spec):
    resolved = method(catalog, write_spec, "{loss: mom, lambda_: {uniform: [0, 1]}}")
    assert list(resolved.space) == ["objective.lambda"]


def test_head_parameters_are_searchable(catalog, write_spec):
    resolved = method(catalog, write_spec, "{loss: auc_2t, head_params: {threshold: {uniform: [0.2, 0.8]}}}")
    assert resolved.head.name == "two_task"
    assert resolved.space == {"head.threshold": Uniform(low=0.2, high=0.8)}


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        ("{loss: focal, gamma: {uniform: [1.0]}}", "methods.m.gamma.uniform", "uniform takes [low, high]"),
        ("{loss: focal, gamma: {uniform: [2.0, 1.0]}}", "methods.m.gamma.uniform", "low (2.0) must be below high (1.0)"),
        ("{loss: focal, gamma: {uniform: [0, x]}}", "methods.m.gamma.uniform[1]", "uniform bounds must be numbers (got 'x')"),
        ("{loss: focal, gamma: {uniform: [-1, 2]}}", "methods.m.gamma.uniform[0]", "greater than or equal to 0 (got -1.0)"),
        ("{loss: wce, window: {int: [1, 2.5]}}", "methods.m.window.int[1]", "int bounds must be integers (got 2.5)"),
        ("{loss: wce, window: {int: [1, 12]}}", "methods.m.window.int[1]", "less than or equal to 9 (got 12)"),
        ("{loss: wce, window: {uniform: [1, 5]}}", "methods.m.window",
         "uniform samples real numbers, which window of loss 'wce' does not take; use {int: [low, high]}"),
        ("{loss: wce, scheme: {choice: [inverse, squared]}}", "methods.m.scheme.choice[1]",
         "input should be 'inverse' or 'log' (got 'squared')"),
        ("{loss: wce, scheme: {choice: [log]}}", "methods.m.scheme.choice", "a choice lists at least two values"),
        ("{loss: wce, scheme: {choice: [log, log]}}", "methods.m.scheme.choice[1]", "value 'log' is listed twice"),
        ("{loss: mom, base: {uniform: [0, 1]}}", "methods.m.base",
         "uniform samples real numbers, which base of loss 'mom' does not take"),
        ("{loss: ce, head_params: {threshold: 0.5}}", "methods.m.head_params.threshold",
         "unknown key 'threshold' in head 'softmax' (allowed: none)"),
        ("{loss: auc_2t, head_params: {threshold: 1.5}}", "methods.m.head_params.threshold", "less than or equal to 1 (got 1.5)"),
        ("{loss: ce, train: {epochs: 0}}", "methods.m.train.epochs", "greater than or equal to 1 (got 0)"),
        ("{loss: ce, train: {epoch: 3}}", "methods.m.train.epoch",
         "unknown key 'epoch' in train of method m; did you mean 'epochs'?"),
        ("{loss: ce, head: crff}", "methods.m.head", "unknown head 'crff'; did you mean 'crf'?"),
        ("{loss: ce, train: {early_stopping: {patience: 0}}}", "methods.m.train.early_stopping.patience",
         "greater than or equal to 1 (got 0)"),
        ("{loss: ce, train: {early_stopping: {min_delta: 0.1}}}", "methods.m.train.early_stopping.patience",
         "missing required key 'patience'"),
        ("{loss: ce, train: {early_stopping: {patience: 2, min_delta: -1}}}", "methods.m.train.early_stopping.min_delta",
         "greater than or equal to 0"),
        ("{loss: ce, train: {early_stopping: {patience: 2, max_epochs: 9}}}", "methods.m.train.early_stopping.max_epochs",
         "unknown key 'max_epochs'"),
    ],
)
def test_bad_hyper_parameters_are_located(catalog, write_spec, body, path, message):
    found = problems(catalog, write_spec, body)
    assert len(found) == 1, found
    assert found[0][0] == path
    assert message in found[0][1]


def test_an_int_distribution_on_a_float_parameter_is_fine(catalog, write_spec):
    resolved = method(catalog, write_spec, "{loss: focal, gamma: {int: [0, 5]}}")
    assert resolved.space == {"objective.gamma": IntRange(low=0, high=5)}


def test_top_level_train_problems_are_reported_once_for_all_methods(catalog, write_spec):
    with pytest.raises(UserInputError) as raised:
        load_spec(write_spec(HEAD + "train: {lr: -1}\nmethods:\n  a: {loss: ce}\n  b: {loss: ce}\n"), catalog)
    assert [p.path for p in raised.value.problems] == ["train.lr"]


def test_early_stopping_is_a_train_setting_with_min_delta_by_default_zero(catalog, write_spec):
    text = HEAD + (
        "train: {epochs: 20, early_stopping: {patience: 3}}\n"
        "methods:\n  a: {loss: ce}\n  b: {loss: ce, train: {early_stopping: null}}\n"
    )
    a, b = load_spec(write_spec(text), catalog).methods
    assert a.train["early_stopping"] == {"patience": 3, "min_delta": 0.0} and a.train["epochs"] == 20
    assert b.train["early_stopping"] is None


def test_method_train_overrides_merge_over_the_shared_train(catalog, write_spec):
    text = HEAD + "train: {epochs: 4, lr: 1.0e-4}\nmethods:\n  a: {loss: ce}\n  b: {loss: ce, train: {epochs: 8}}\n"
    a, b = load_spec(write_spec(text), catalog).methods
    assert (a.train["epochs"], a.train["lr"]) == (4, 1e-4)
    assert (b.train["epochs"], b.train["lr"]) == (8, 1e-4)
    assert (a.train_at, b.train_at) == (("train",), ("methods", "b", "train"))


def test_the_head_comes_from_the_method_then_the_model_then_the_objective(catalog, write_spec):
    text = HEAD + (
        "model: {head: crf}\nmethods:\n  a: {loss: ce}\n  b: {loss: ce, head: softmax}\n  c: {loss: auc_2t, head: two_task}\n"
    )
    heads = [m.head.name for m in load_spec(write_spec(text), catalog).methods]
    assert heads == ["crf", "softmax", "two_task"]
    default = load_spec(write_spec(HEAD + "methods:\n  a: {loss: auc_2t}\n  b: {loss: ce}\n"), catalog).methods
    assert [m.head.name for m in default] == ["two_task", "softmax"]
