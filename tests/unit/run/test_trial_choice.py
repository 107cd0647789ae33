"""The arm's choice: a function of its finished trials' points, scores and sample indexes alone."""

from __future__ import annotations

import itertools
import math

import pytest

from nerplat.run.trial_choice import FinishedTrial, chosen_trial, first_free_index, legacy_sample_indexes


def trial(lam: float, value: float, index: int) -> FinishedTrial:
    return FinishedTrial({"objective.lambda": lam}, value, f"run-{index}", f"t{index:04d}", index)


# Issue 62: the tiny encoder's three trials all scored dev 0.0319; the clean run chose 0.8613.
TIED = (trial(0.8613, 0.0319, 0), trial(0.7531, 0.0319, 1), trial(0.6821, 0.0319, 2))


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_tied_trials_choose_the_earliest_sampled_in_whatever_order_they_are_listed(order):
    """MLflow lists the newest run first, a rebuilt study numbered them so, a re-queue in start order:
    none of it may change the choice."""
    assert chosen_trial([TIED[n] for n in order], "max") == TIED[0]
    assert chosen_trial([TIED[n] for n in order], "min") == TIED[0]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_the_sample_index_decides_a_tie_not_the_run_name(order):
    """A point an interrupted trial held runs again under a later run name and keeps its index."""
    rerun = FinishedTrial({"objective.lambda": 0.8613}, 0.0319, "run-9", "t0009", 0)
    trials = [(rerun, TIED[1], TIED[2])[n] for n in order]
    assert chosen_trial(trials, "max") == rerun


def test_the_best_value_wins_before_any_tie_break():
    trials = [trial(0.1, 0.5, 0), trial(0.2, 0.7, 3), trial(0.3, 0.7, 2), trial(0.4, 0.6, 1)]
    assert chosen_trial(trials, "max").values == {"objective.lambda": 0.3}
    assert chosen_trial(trials, "min").values == {"objective.lambda": 0.1}


def test_a_nan_value_is_never_chosen_over_a_number():
    trials = [trial(0.1, math.nan, 0), trial(0.2, 0.1, 1)]
    assert chosen_trial(trials, "max").values == {"objective.lambda": 0.2}
    assert chosen_trial(trials, "min").values == {"objective.lambda": 0.2}


def test_there_is_no_choice_without_a_finished_trial():
    with pytest.raises(ValueError, match="no finished trial"):
        chosen_trial([], "max")


def test_a_new_trial_takes_the_smallest_index_no_trial_holds():
    assert first_free_index(set()) == 0
    assert first_free_index({0, 1, 3}) == 2  # 2: a trial the driver asked for but never ran under a run


def test_runs_without_a_recorded_index_are_placed_first_in_start_order():
    """Runs of an earlier nerplat: the order they started, which was their sampling order one at a time."""
    assert legacy_sample_indexes([None, None, None]) == [0, 1, 2]
    assert legacy_sample_indexes([None, 3, None, 0]) == [1, 3, 2, 0]
