import math

import pytest

from nerplat.config.search_space import Choice, IntRange, LogUniform, Uniform
from nerplat.errors import UserInputError
from nerplat.run.search import (
    SCHEDULERS,
    SEARCHERS,
    TrialSeeds,
    grid_combinations,
    grid_points,
    optuna_distributions,
    searcher_seed,
    tune_domains,
)

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


def test_grid_combinations_are_every_point_once_in_a_seeded_order():
    grid = grid_points(SPACE, points_per_axis=2)
    combinations = grid_combinations(grid, seed=0)
    assert len(combinations) == math.prod(len(values) for values in grid.values())
    assert len({tuple(sorted(point.items())) for point in combinations}) == len(combinations)
    assert combinations == grid_combinations(grid, seed=0) != grid_combinations(grid, seed=1)


@pytest.mark.parametrize("name", ["tpe", "random", "grid"])
def test_every_searcher_searches_the_arms_persistent_study(name, tmp_path):
    from nerplat.run.study import ArmStudy, prepare_study
    from nerplat.run.study_search import StudySearch
    from nerplat.track.studies import open_optuna_storage

    study = ArmStudy(open_optuna_storage(f"sqlite:///{tmp_path / 'optuna.db'}"), "e/arm")
    prepare_study(study, owner="tune-run", metric="dev_best_micro_f1", mode="max", distributions=optuna_distributions(SPACE))
    searcher = SEARCHERS.build(name, {}, at="tune.search", space=SPACE, seeds=TrialSeeds(0, "e/arm"), study=study)
    assert isinstance(searcher, StudySearch)
    assert (searcher._study_name, searcher._storage) == ("e/arm", study.storage)
    assert not searcher._points_to_evaluate and searcher._evaluated_rewards is None  # Ray's warm start would add trials twice
    assert searcher.set_search_properties("dev_best_micro_f1", "max", tune_domains(SPACE))
    searcher.suggest("tune-1")
    searcher.save(str(tmp_path / "searcher.pkl"))  # as Tune saves its experiment state: every part pickles


def test_each_arm_and_each_place_in_its_search_gets_its_own_stable_seed():
    """Issue 30: every tuned arm drew the same quantiles from seed 0 (lambda 0.549, 0.715, ...)."""
    mom, focal = "conll2003/full/mom", "conll2003/full/focal"
    assert searcher_seed(0, mom, 0) == searcher_seed(0, mom, 0) == 1295779702  # sha256: the same on every machine
    seeds = {searcher_seed(0, mom, 0), searcher_seed(0, focal, 0), searcher_seed(1, mom, 0), searcher_seed(0, mom, 1)}
    assert len(seeds) == 4 and all(0 <= seed < 2**32 for seed in seeds)


def test_an_interrupted_trial_takes_no_place_in_the_search():
    """Issue 47: its point runs again as a later trial, which takes its place; the trials after keep a clean run's seeds."""
    seeds = TrialSeeds(0, "e/arm", interrupted=frozenset({1, 3}))
    assert [seeds.place(number) for number in range(6)] == [0, 1, 1, 2, 2, 3]
    assert seeds.of(5) == TrialSeeds(0, "e/arm").of(3) == searcher_seed(0, "e/arm", 3)


def test_the_optuna_distributions_are_those_rays_optuna_search_makes_of_the_tune_domains():
    """Built without Ray (a resume with nothing to run reads its studies); Ray's conversion is the oracle."""
    from ray.tune.search.optuna import OptunaSearch

    assert optuna_distributions(SPACE) == OptunaSearch.convert_search_space(tune_domains(SPACE))


def test_asha_never_waits_longer_than_the_trial_lasts():
    scheduler = SCHEDULERS.build("asha", {"grace_period": 5}, at="tune.scheduler", max_t=2)
    assert scheduler._max_t == 2
    assert scheduler._brackets[0]._rungs[0][0] <= 2  # the first rung (grace period) fits in the trial


def test_bad_searcher_and_scheduler_options_are_located_in_the_tune_section():
    with pytest.raises(UserInputError) as caught:
        SEARCHERS.build("tpe", {"n_startup_trials": -1}, at="tune.search", space=SPACE, seed=0, study=None)
    assert [p.path for p in caught.value.problems] == ["tune.search.n_startup_trials"]
    with pytest.raises(UserInputError, match="did you mean 'asha'"):
        SCHEDULERS.build("ashaa", {}, at="tune.scheduler", max_t=2)
