"""`tune.enqueue`: a method's starting points, checked against its search space and shown by `nerplat plan`."""

import pytest

from nerplat.cli import main
from nerplat.config.search_space import Uniform
from nerplat.config.trial import Component
from nerplat.spec.methods import ResolvedMethod
from nerplat.spec.starting_points import searched_key
from nerplat.spec.validate import load_spec
from spec_testing import spec_problems

TUNED = (
    "experiment: t\ndataset: conll2003\n"
    "methods:\n"
    "  ce: {loss: ce}\n"
    "  mom: {loss: mom, lambda: {uniform: [0, 1]}, train: {lr: {loguniform: [1.0e-5, 1.0e-3]}}}\n"
    "  focal: {loss: focal, gamma: {uniform: [0, 10]}}\n"
)


def test_points_take_the_search_spaces_names_and_become_dotted_keys(catalog, write_spec):
    enqueue = "{mom: [{lambda: 0.175}, {objective.lambda: 1, lr: 0.0001}], focal: [{gamma: 2}]}"
    tune = load_spec(write_spec(TUNED + f"tune: {{num_samples: 4, enqueue: {enqueue}}}\n"), catalog).tune
    assert tune.enqueue == {
        "mom": ({"objective.lambda": 0.175}, {"objective.lambda": 1.0, "train.lr": 0.0001}),
        "focal": ({"objective.gamma": 2.0},),
    }
    assert isinstance(tune.enqueue["focal"][0]["objective.gamma"], float)  # as the searcher draws it
    assert load_spec(write_spec(TUNED + "tune: {}\n"), catalog).tune.enqueue == {}


@pytest.mark.parametrize(
    ("tune", "path", "message"),
    [
        ("{enqueue: {dice: [{lambda: 0.1}]}}", "tune.enqueue.dice", "unknown method 'dice' (methods that search: focal, mom)"),
        ("{enqueue: {ce: [{lambda: 0.1}]}}", "tune.enqueue.ce", "method ce searches nothing"),
        ("{enqueue: {mom: [{gamma: 2}]}}", "tune.enqueue.mom[0].gamma", "unknown key 'gamma' (method mom searches: lambda, lr)"),
        ("{enqueue: {mom: [{lambda: 1.5}]}}", "tune.enqueue.mom[0].lambda",
         "1.5 is outside objective.lambda's distribution uniform(0, 1)"),
        ("{enqueue: {mom: [{lambda: true}]}}", "tune.enqueue.mom[0].lambda", "True is outside"),
        ("{enqueue: {mom: [{lambda: 0.5, objective.lambda: 0.5}]}}", "tune.enqueue.mom[0]['objective.lambda']",
         "names objective.lambda a second time"),
        ("{enqueue: {mom: [{}]}}", "tune.enqueue.mom[0]", "names at least one searched key"),
        ("{enqueue: {mom: [{lambda: 0.1}, {lambda: 0.1}]}}", "tune.enqueue.mom[1]", "listed twice"),
        ("{num_samples: 1, enqueue: {mom: [{lambda: 0.1}, {lambda: 0.2}]}}", "tune.enqueue.mom",
         "2 starting points for method mom, but it runs 1 trials"),
        ("{search: grid, enqueue: {mom: [{lambda: 0.1}]}}", "tune.enqueue", "grid search runs every grid point"),
        ("{enqueue: {mom: {lambda: 0.1}}}", "tune.enqueue.mom", "valid list"),
        ("{seed: -1}", "tune.seed", "greater than or equal to 0"),
    ],
)
def test_bad_starting_points_are_located(catalog, write_spec, tune, path, message):
    found = spec_problems(catalog, write_spec, TUNED + f"tune: {tune}\n")
    assert len(found) == 1, found
    assert found[0][0] == path and found[0][1] == 7  # the tune line
    assert message in found[0][2]


def test_a_short_name_two_parts_search_asks_for_the_dotted_one():
    uniform = Uniform(low=0.0, high=1.0)
    method = ResolvedMethod(
        "m", Component(name="x"), Component(name="y"), {}, space={"objective.alpha": uniform, "head.alpha": uniform}
    )
    assert searched_key(method, "head.alpha") == ("head.alpha", None)
    assert searched_key(method, "alpha")[1] == (
        "'alpha' is searched in several parts of method m: write one of objective.alpha, head.alpha"
    )


def test_plan_shows_the_starting_points_and_the_seed(capsys):
    from pathlib import Path

    spec = Path(__file__).parents[2] / "integration" / "specs" / "tiny_run.yaml"
    assert main(["plan", str(spec), "--set", "tune.enqueue={mom: [{lambda: 0.175}]}", "--set", "tune.seed=7"]) == 0
    out = capsys.readouterr().out
    assert "seed 7 (each arm's searcher its own)" in out and "mom starts from: objective.lambda=0.175" in out
