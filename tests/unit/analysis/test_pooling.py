"""DerSimonian-Laird pooling against a hand computation and its limiting cases."""

from __future__ import annotations

import math

import pytest

from nerplat.analysis.pooling import dersimonian_laird


def test_consistent_runs_pool_as_a_fixed_effect_weighted_by_precision():
    pooled = dersimonian_laird([0.0417, 0.0400], [0.010, 0.012])
    w = [1 / 0.010**2, 1 / 0.012**2]
    assert pooled.tau2 == 0.0  # Q below its k - 1 expectation
    assert pooled.estimate == pytest.approx((w[0] * 0.0417 + w[1] * 0.0400) / sum(w))
    assert pooled.se == pytest.approx(1 / math.sqrt(sum(w)))
    assert pooled.ci_high - pooled.estimate == pytest.approx(1.959964 * pooled.se, rel=1e-6)


def test_runs_that_disagree_get_a_between_run_variance_and_a_wider_interval():
    y, se = [0.0, 0.1, 0.3], [0.02, 0.02, 0.02]
    pooled = dersimonian_laird(y, se)
    w = 1 / 0.02**2
    mean = sum(y) / 3
    q = w * sum((v - mean) ** 2 for v in y)
    assert pooled.tau2 == pytest.approx((q - 2) / (3 * w - 3 * w**2 / (3 * w)))
    assert pooled.estimate == pytest.approx(mean) and pooled.se > 0.02 / math.sqrt(3)


def test_runs_without_a_standard_error_are_left_out_and_none_pool_to_nothing():
    assert dersimonian_laird([0.1, 0.2], [math.nan, 0.0]) is None
    one = dersimonian_laird([0.1, 0.2], [0.05, math.nan])
    assert (one.estimate, one.runs) == (0.1, 1)
