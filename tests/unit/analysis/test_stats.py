"""Statistics checked against SciPy on the same numbers, and the bootstrap for determinism."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as scipy_stats

from nerplat.analysis.stats import bootstrap_summary, holm, paired_test, resample_counts

RNG = np.random.default_rng(7)
SAMPLE = RNG.normal(0.6, 0.05, size=12)


def test_resample_counts_draw_n_observations_per_resample():
    counts = resample_counts(12, 500, seed=3)
    assert counts.shape == (500, 12)
    assert (counts.sum(axis=1) == 12).all()
    assert counts.std() > 0


def test_bootstrap_se_and_interval_agree_with_scipy():
    se, low, high = bootstrap_summary(SAMPLE[None, :], resamples=20_000, seed=1, confidence=0.95)
    reference = scipy_stats.bootstrap(
        (SAMPLE,), np.mean, n_resamples=20_000, method="percentile", confidence_level=0.95, rng=np.random.default_rng(2)
    )
    # two independent Monte Carlo estimates of the same quantities
    assert se[0] == pytest.approx(reference.standard_error, rel=0.03)
    assert low[0] == pytest.approx(reference.confidence_interval.low, abs=0.003)
    assert high[0] == pytest.approx(reference.confidence_interval.high, abs=0.003)
    # and the bootstrap SE of a mean is close to the plug-in formula sd(ddof=0)/sqrt(n)
    assert se[0] == pytest.approx(SAMPLE.std() / np.sqrt(SAMPLE.size), rel=0.05)


def test_bootstrap_is_deterministic_by_seed_and_changes_with_it():
    first = bootstrap_summary(SAMPLE[None, :], 1000, seed=5, confidence=0.95)
    again = bootstrap_summary(SAMPLE[None, :], 1000, seed=5, confidence=0.95)
    other = bootstrap_summary(SAMPLE[None, :], 1000, seed=6, confidence=0.95)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert first[0][0] != other[0][0]


def test_a_groups_bootstrap_does_not_depend_on_the_other_groups():
    alone = bootstrap_summary(SAMPLE[None, :], 1000, seed=5, confidence=0.95)
    stacked = bootstrap_summary(np.stack([SAMPLE + 1, SAMPLE, SAMPLE * 2]), 1000, seed=5, confidence=0.95)
    # equal up to the rounding of a differently blocked matrix product
    assert stacked[0][1] == pytest.approx(alone[0][0], rel=1e-12)
    assert stacked[1][1] == pytest.approx(alone[1][0], rel=1e-12)


def test_fewer_than_two_observations_give_nan():
    se, low, high = bootstrap_summary(np.array([[0.5], [0.7]]), 100, seed=0, confidence=0.95)
    assert np.isnan(se).all() and np.isnan(low).all() and np.isnan(high).all()


@pytest.mark.parametrize("test", ["paired_t", "wilcoxon"])
def test_paired_tests_equal_scipy_row_by_row(test):
    a = RNG.normal(0.6, 0.03, size=(4, 10))
    b = a + RNG.normal(0.01, 0.02, size=(4, 10))
    statistic, p_value = paired_test(a, b, test)
    reference = scipy_stats.ttest_rel if test == "paired_t" else scipy_stats.wilcoxon
    for row in range(4):
        expected = reference(a[row], b[row])
        assert statistic[row] == pytest.approx(expected.statistic)
        assert p_value[row] == pytest.approx(expected.pvalue)


def test_paired_t_on_identical_runs_is_undefined_not_significant():
    a = RNG.normal(size=(1, 5))
    statistic, p_value = paired_test(a, a.copy(), "paired_t")
    assert np.isnan(statistic[0]) and np.isnan(p_value[0])


def _holm_by_definition(p: list[float]) -> list[float]:
    """Holm (1979): adjusted p_(i) = max over j <= i of min(1, (m - j + 1) p_(j)), ranks from 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    adjusted = [0.0] * m
    for rank, index in enumerate(order, start=1):
        adjusted[index] = max(min(1.0, (m - j + 1) * p[order[j - 1]]) for j in range(1, rank + 1))
    return adjusted


def test_holm_matches_its_definition_and_a_worked_example():
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm(np.array(p)) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    for values in itertools.islice(itertools.product([0.001, 0.02, 0.2, 0.7], repeat=4), 0, None, 7):
        assert holm(np.array(values)) == pytest.approx(_holm_by_definition(list(values)))


def test_holm_leaves_nan_out_of_the_family_size():
    adjusted = holm(np.array([0.01, np.nan, 0.02]))
    assert np.isnan(adjusted[1])
    assert adjusted[[0, 2]] == pytest.approx([0.02, 0.02])


def test_minimum_detectable_effect_matches_the_textbook_paired_t_sample_size():
    # Cohen's d = 0.5 needs 34 pairs for 80% power at alpha 0.05 (two-sided paired t, G*Power);
    # with those 34 pairs the detectable effect is just under 0.5 sd.
    from nerplat.analysis.stats import minimum_detectable_effect, pairs_needed

    assert pairs_needed(0.5, 1.0, 0.05) == 34
    assert pairs_needed(-0.5, 1.0, 0.05) == 34
    assert 0.48 < minimum_detectable_effect(1.0, 34, 0.05) <= 0.5
    assert minimum_detectable_effect(2.0, 34, 0.05) == pytest.approx(2 * minimum_detectable_effect(1.0, 34, 0.05))


def test_power_at_the_minimum_detectable_effect_is_eighty_percent_and_grows_with_n():
    from nerplat.analysis.stats import minimum_detectable_effect, paired_t_power

    mde = minimum_detectable_effect(0.02, 3, 0.05)
    assert paired_t_power(mde, 0.02, 3, 0.05) == pytest.approx(0.8, abs=1e-6)
    assert minimum_detectable_effect(0.02, 10, 0.05) < mde


def test_power_is_undefined_without_spread_or_effect():
    from nerplat.analysis.stats import minimum_detectable_effect, pairs_needed, power_analysis

    assert np.isnan(minimum_detectable_effect(0.0, 5, 0.05))
    assert np.isnan(minimum_detectable_effect(0.1, 1, 0.05))
    assert np.isnan(pairs_needed(0.0, 1.0, 0.05))
    assert np.isnan(pairs_needed(1e-6, 1.0, 0.05))  # beyond MAX_PAIRS
    mde_t, needed_t = power_analysis(np.array([0.5]), np.array([1.0]), np.array([10.0]), 0.05, "paired_t")
    mde_w, needed_w = power_analysis(np.array([0.5]), np.array([1.0]), np.array([10.0]), 0.05, "wilcoxon")
    assert needed_t[0] == 34 and needed_w[0] == np.ceil(34 * np.pi / 3)
    assert mde_w[0] > mde_t[0]


def test_two_pairs_have_a_minimum_detectable_effect():
    # With 2 replicates (1 degree of freedom) scipy's noncentral t gives NaN for the far tail:
    # the power function must still be defined, and the MDE is many times the spread.
    from nerplat.analysis.stats import minimum_detectable_effect, paired_t_power

    mde = minimum_detectable_effect(0.05, 2, 0.05)
    assert paired_t_power(mde, 0.05, 2, 0.05) == pytest.approx(0.8, abs=1e-6)
    assert mde > 10 * 0.05
