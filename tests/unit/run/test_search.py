import pytest

from nerplat.config.search_space import Choice, IntRange, LogUniform, Uniform
from nerplat.errors import UserInputError
from nerplat.run.search import SCHEDULERS, SEARCHERS, grid_points, tune_domains

SPACE = {
    "objective.lambda": Uniform(low=0.0, high=1.0),
    "train.lr": LogUniform(low=1e-5, high=1e-3),
    "objective.m": IntRange(low=1, high=3),
    "objective.base": Choice(options=("ce", "focal")),
}


def test_tune_domains_keep_bounds_and_kinds():
    domains = tune_domains(SPACE)
    assert (domains["objective.lambda"].lower, domains["objective.lambda"].upper) == (0.0, 1.0)
    assert (domains["train.lr"].lower, domains["train.lr"].upper) == (1e-5, 1e-3)
    assert (domains["objective.m"].lower, domains["objective.m"].upper) == (1, 4)  # randint's upper bound is exclusive
    assert domains["objective.base"].categories == ["ce", "focal"]


def test_grid_points_match_the_compilers_trial_count():
    grid = grid_points(SPACE, points_per_axis=3)
    assert grid["objective.lambda"] == [0.0, 0.5, 1.0]
    assert grid["train.lr"] == pytest.approx([1e-5, 1e-4, 1e-3])
    assert grid["objective.m"] == [1, 2, 3]
    assert grid["objective.base"] == ["ce", "focal"]


@pytest.mark.parametrize("name", ["tpe", "random", "grid"])
def test_every_searcher_builds_an_optuna_search_warm_started_with_finished_trials(name):
    finished = [({"objective.lambda": 0.5, "train.lr": 1e-4, "objective.m": 2, "objective.base": "ce"}, 0.7)]
    searcher = SEARCHERS.build(name, {}, at="tune.search", space=SPACE, seed=0, evaluated=finished)
    assert type(searcher).__name__ == "OptunaSearch"
    assert searcher._points_to_evaluate == [finished[0][0]] and searcher._evaluated_rewards == [0.7]


def test_asha_never_waits_longer_than_the_trial_lasts():
    scheduler = SCHEDULERS.build("asha", {"grace_period": 5}, at="tune.scheduler", max_t=2)
    assert scheduler._max_t == 2
    assert scheduler._brackets[0]._rungs[0][0] <= 2  # the first rung (grace period) fits in the trial


def test_bad_searcher_and_scheduler_options_are_located_in_the_tune_section():
    with pytest.raises(UserInputError) as caught:
        SEARCHERS.build("tpe", {"n_startup_trials": -1}, at="tune.search", space=SPACE, seed=0)
    assert [p.path for p in caught.value.problems] == ["tune.search.n_startup_trials"]
    with pytest.raises(UserInputError, match="did you mean 'asha'"):
        SCHEDULERS.build("ashaa", {}, at="tune.scheduler", max_t=2)
