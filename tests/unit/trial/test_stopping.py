"""The stopping rule alone: patience over dev evaluations, min_delta, and the cap."""

from __future__ import annotations

import math

import pytest

from nerplat.config.trial import EarlyStopping
from nerplat.trial.stopping import evaluations_without_improvement, stopped_by


def test_patience_counts_evaluations_since_the_last_rise_above_min_delta():
    values = [0.50, 0.60, 0.605, 0.61, 0.59]
    assert evaluations_without_improvement(values, 0.0) == 1
    assert evaluations_without_improvement(values, 0.02) == 3  # 0.605 and 0.61 rose less than 0.02 above 0.60
    assert evaluations_without_improvement([], 0.0) == 0
    assert evaluations_without_improvement([0.4, 0.5, math.nan, math.nan], 0.0) == 2  # NaN never improves


def test_no_plateau_before_a_run_rises_above_its_first_evaluation():
    assert evaluations_without_improvement([0.0, 0.0, 0.0, 0.0], 0.0) == 0
    assert evaluations_without_improvement([0.0, 0.0, 0.0, 0.2, 0.2, 0.19], 0.0) == 2
    # a constant predictor's score first, then a dip (auc2t_lowres_conll's rerun at 50 sentences)
    assert evaluations_without_improvement([0.135, 0.13, 0.122, 0.08, 0.04], 0.002) == 0
    rule = EarlyStopping(patience=3, min_delta=0.002)
    assert stopped_by([0.135, 0.13, 0.122, 0.08], rule, epoch=4, cap=20) is None
    assert stopped_by([0.0] * 20, rule, epoch=20, cap=20) == "cap"  # never learned: not converged


def test_a_trial_stops_by_patience_by_the_cap_or_goes_on():
    rule = EarlyStopping(patience=2, min_delta=0.01)
    assert stopped_by([0.5, 0.6, 0.605], rule, epoch=3, cap=10) is None
    assert stopped_by([0.5, 0.6, 0.605, 0.6], rule, epoch=4, cap=10) == "patience"
    assert stopped_by([0.5, 0.6, 0.605, 0.6], rule, epoch=4, cap=4) == "patience"  # a plateau shown at the cap
    assert stopped_by([0.5, 0.6, 0.7], rule, epoch=3, cap=3) == "cap"
    assert stopped_by([0.5, 0.5, 0.5], None, epoch=3, cap=5) is None
    assert stopped_by([0.5, 0.5, 0.5], None, epoch=5, cap=5) == "cap"


@pytest.mark.parametrize(
    "settings", [{"patience": 0}, {"patience": 2, "min_delta": -0.1}, {"min_delta": 0.1}, {"patience": 2, "max_epochs": 9}]
)
def test_early_stopping_refuses_what_cannot_stop_a_trial(settings):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        EarlyStopping(**settings)
