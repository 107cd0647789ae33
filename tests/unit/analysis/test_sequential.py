"""The group-sequential design: its look schedule, the false-positive rate of 20,000 simulated null
experiments, power, repeated intervals, verdicts and stopping (the boundaries themselves:
test_boundaries.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from nerplat.analysis.boundaries import boundaries
from nerplat.analysis.sequential import (
    decide,
    look_schedule,
    operating_characteristics,
    repeated_interval,
    repeated_intervals,
    VerdictRule,
    design_power,
    equivalence_power,
    equivalence_units,
    units_for_power,
)

ALPHA = 0.05
SPENDINGS = ["obrien_fleming", "pocock"]
NULL_EXPERIMENTS = 20_000


# --- schedule --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_seeds", "look_every", "looks"),
    [(20, 3, (3, 6, 9, 12, 15, 18, 20)), (10, 2, (4, 6, 8, 10)), (6, 1, (3, 4, 5, 6)), (5, 5, (5,)), (3, 10, (3,))],
)
def test_looks_every_k_seeds_from_the_minimum_and_at_max_seeds(max_seeds, look_every, looks):
    assert look_schedule(max_seeds, look_every) == looks


def test_a_schedule_below_the_minimum_says_what_to_raise():
    with pytest.raises(ValueError, match="max_seeds 2 is below the first look's minimum of 3 pairs"):
        look_schedule(2, 1)
    with pytest.raises(ValueError, match="look_every 0"):
        look_schedule(10, 0)


# --- the false-positive rate -----------------------------------------------------------------


def mc_limit(rate: float, experiments: int) -> float:
    return 3.0 * math.sqrt(rate * (1.0 - rate) / experiments)


@pytest.mark.parametrize("spending", SPENDINGS)
@pytest.mark.parametrize(("max_seeds", "look_every"), [(10, 1), (20, 3)])
def test_no_true_effect_is_excluded_at_some_look_about_alpha_of_the_time(spending, max_seeds, look_every):
    """20,000 null experiments (differences ~ N(0, sd)), every look taken, no stopping: the share
    whose repeated interval excludes 0 at any look (on either side) is alpha within 3 Monte
    Carlo standard errors. 18 looks from 3 pairs is where the t-conversion of z boundaries alone
    reached 6.1%."""
    design = boundaries(look_schedule(max_seeds, look_every), max_seeds, ALPHA, spending)
    sd = 0.004
    differences = sd * np.random.default_rng(11).standard_normal((NULL_EXPERIMENTS, max_seeds))
    low, high = repeated_intervals(differences, design)
    rate = float(((low > 0) | (high < 0)).any(axis=1).mean())
    limit = mc_limit(ALPHA, NULL_EXPERIMENTS)
    assert abs(rate - ALPHA) <= limit, f"{spending}, looks {design.looks}: rejected 0 in {rate:.4f} of experiments"


@pytest.mark.parametrize("spending", SPENDINGS)
@pytest.mark.parametrize("side", [1, -1])
def test_deciding_by_the_design_under_no_true_effect_keeps_the_false_positive_rate(spending, side):
    """The design as run: stop at the first deciding look. Under no true effect every decision of a
    superior claim is a false positive: `reproduced` or `opposite`, each on an interval excluding 0."""
    design = boundaries(look_schedule(6, 1), 6, ALPHA, spending)
    result = operating_characteristics(0.0, 0.004, VerdictRule(side=side), design, NULL_EXPERIMENTS, seed=5)
    assert result.rejects_zero <= ALPHA + mc_limit(ALPHA, NULL_EXPERIMENTS), f"{spending}: {result}"
    assert result.for_paper + result.against_paper == pytest.approx(result.rejects_zero)
    assert sum(result.decided_by_look) == pytest.approx(result.for_paper + result.against_paper)


# --- power ------------------------------------------------------------------------------------


def test_units_for_power_reach_the_power_and_one_fewer_does_not():
    units = units_for_power(0.01, 0.02, ALPHA)
    assert design_power(0.01, 0.02, int(units), ALPHA) >= 0.8 > design_power(0.01, 0.02, int(units) - 1, ALPHA)
    assert units_for_power(0.01, 0.02, ALPHA, power=0.9) > units


def test_design_power_matches_a_simulated_paired_t_test():
    rng = np.random.default_rng(5)
    d = 0.01 + 0.02 * rng.standard_normal((20_000, 12))
    rejected = scipy_stats.ttest_1samp(d, 0.0, axis=1).pvalue < ALPHA
    assert design_power(0.01, 0.02, 12, ALPHA) == pytest.approx(rejected.mean(), abs=0.015)


def test_design_power_is_nan_where_undefined():
    assert math.isnan(design_power(0.01, 0.0, 9, ALPHA))
    assert math.isnan(design_power(0.0, 0.02, 9, ALPHA))
    assert math.isnan(design_power(0.01, 0.02, 1, ALPHA))


def test_simulations_are_deterministic_by_seed():
    design = boundaries(look_schedule(12, 3), 12, ALPHA, "pocock")
    rule = VerdictRule(side=1)
    first = operating_characteristics(0.002, 0.004, rule, design, 2000, seed=1)
    assert operating_characteristics(0.002, 0.004, rule, design, 2000, seed=1) == first
    assert operating_characteristics(0.002, 0.004, rule, design, 2000, seed=2) != first


# --- intervals, verdicts and stopping ---------------------------------------------------------


def test_the_repeated_interval_is_the_t_interval_at_the_looks_level():
    design = boundaries(look_schedule(12, 3), 12, ALPHA, "pocock")
    differences = np.random.default_rng(4).normal(0.003, 0.004, size=12)
    for k, n in enumerate(design.looks):
        first = differences[:n]
        expected = scipy_stats.t.interval(1 - design.nominal_alpha[k], n - 1, loc=first.mean(), scale=scipy_stats.sem(first))
        assert repeated_interval(differences, k, design) == pytest.approx(expected, rel=1e-9)
    with pytest.raises(ValueError, match="look 3 needs 12 pairs, 11 given"):
        repeated_interval(differences[:11], 3, design)
    with pytest.raises(ValueError, match="finite"):
        repeated_intervals(np.array([0.1, np.nan, 0.2]), design)


@pytest.mark.parametrize(
    ("low", "high", "rule", "verdict"),
    [
        (0.001, 0.009, VerdictRule(side=1), "reproduced"),  # wholly on the paper's side
        (0.02, 0.05, VerdictRule(side=1), "reproduced"),  # on the paper's side, however large: magnitude is another verdict
        (-0.001, 0.002, VerdictRule(side=1), "inconclusive"),  # spans zero
        (-0.009, -0.001, VerdictRule(side=1), "opposite"),  # wholly on the other side of zero
        (-0.009, -0.002, VerdictRule(side=-1), "reproduced"),  # a paper effect below zero
        (0.001, 0.004, VerdictRule(side=-1), "opposite"),
        (0.001, 0.009, VerdictRule(side=1, extrapolation=True), "extends"),  # a setting the paper never ran
        (-0.009, -0.001, VerdictRule(side=1, extrapolation=True), "does not extend"),  # never "opposite" to the paper
        (-0.001, 0.002, VerdictRule(side=1, extrapolation=True), "inconclusive"),
        (-0.004, 0.009, VerdictRule(margin=0.01), "equivalent"),  # within (-margin, margin)
        (-0.004, 0.011, VerdictRule(margin=0.01), "inconclusive"),  # reaches past the margin
        (0.01, 0.03, VerdictRule(margin=0.01), "not equivalent"),  # wholly at or beyond it
        (-0.05, -0.012, VerdictRule(margin=0.01), "not equivalent"),
    ],
)
def test_the_verdict_rule(low, high, rule, verdict):
    assert rule.verdict(low, high) == verdict


@pytest.mark.parametrize(("side", "margin"), [(0, None), (1, 0.01), (2, None), (0, 0.0)])
def test_a_verdict_rule_is_a_side_or_a_margin(side, margin):
    with pytest.raises(ValueError, match="a side"):
        VerdictRule(side=side, margin=margin)


def test_deciding_stops_at_the_first_look_whose_interval_decides():
    design = boundaries(look_schedule(12, 3), 12, ALPHA, "pocock")
    noisy = [0.005, 0.0, 0.005]  # look 0: the interval spans zero and the paper's effect
    steady = [0.004, 0.0035, 0.0045]  # look 1: six pairs, the interval lies above zero
    against = [-0.08, -0.081, -0.079, -0.08, -0.082, -0.078]  # later pairs that would point the other way
    rule = VerdictRule(side=1)
    assert rule.verdict(*repeated_interval(noisy, 0, design)) == "inconclusive"
    assert rule.verdict(*repeated_interval(noisy + steady, 1, design)) == "reproduced"
    assert rule.verdict(*repeated_interval(noisy + steady + against, 3, design)) == "opposite"

    decision = decide(noisy + steady + against, rule, design)
    assert (decision.verdict, decision.decided_look, decision.decided_pairs, decision.next_pairs) == ("reproduced", 1, 6, None)
    assert [look.verdict for look in decision.looks] == ["inconclusive", "reproduced"]
    assert decision.looks[1].ci_low > 0 and decision.looks[1].nominal_alpha == design.nominal_alpha[1]
    assert decide(noisy + steady, rule, design) == decision


def test_an_undecided_claim_asks_for_the_next_look_until_the_last():
    design = boundaries(look_schedule(9, 3), 9, ALPHA, "pocock")
    before = decide([0.01, -0.01], VerdictRule(side=1), design)
    assert (before.verdict, before.looks, before.next_pairs) == ("inconclusive", (), 3)
    spanning = [0.01, -0.008, 0.002, 0.009, -0.007, 0.001, 0.008, -0.009, 0.003]
    midway = decide(spanning[:5], VerdictRule(side=1), design)
    assert (midway.verdict, midway.decided_look, len(midway.looks), midway.next_pairs) == ("inconclusive", None, 1, 6)
    last = decide(spanning, VerdictRule(side=1), design)
    assert (last.verdict, last.decided_look, len(last.looks), last.next_pairs) == ("inconclusive", None, 3, None)


# --- the design on units: partition effects and skew ------------------------------------------

UNIT_EXPERIMENTS = 50_000
UNIT_LIMIT = 0.06  # alpha 0.05 plus a tolerance far beyond the Monte Carlo error of the fixed seeds


def _ever_excludes_zero(differences: np.ndarray, design) -> float:
    """Share of null experiments whose repeated interval excludes 0 at some look: the design's
    false-positive rate (a superior claim stops at the first such look, either side)."""
    low, high = repeated_intervals(differences, design)
    return float(((low > 0) | (high < 0)).any(axis=1).mean())


def test_looks_at_3_6_9_partitions_hold_alpha_at_partition_icc_half_where_seed_pairs_do_not():
    """Paired differences = partition effect (variance share 0.5) + seed noise, 3 seeds per
    partition. Averaged within partition and looked at after 3, 6 and 9 partitions (Pocock), a
    true zero is excluded at most alpha of the time; the same runs read as 27 independent seed
    pairs (looks at 9, 18, 27) exclude it far more often: the pseudo-replication units avoid."""
    icc, seeds = 0.5, 3
    rng = np.random.default_rng(21)
    d = (
        math.sqrt(icc) * rng.standard_normal((UNIT_EXPERIMENTS, 9, 1))
        + math.sqrt(1 - icc) * rng.standard_normal((UNIT_EXPERIMENTS, 9, seeds))
    )
    by_partition = _ever_excludes_zero(d.mean(axis=2), boundaries(look_schedule(9, 3), 9, ALPHA, "pocock"))
    by_seed = _ever_excludes_zero(d.reshape(UNIT_EXPERIMENTS, 9 * seeds), boundaries(look_schedule(27, 9), 27, ALPHA, "pocock"))
    assert by_partition <= UNIT_LIMIT, f"partition units: {by_partition:.4f}"
    assert by_seed > 2 * ALPHA, f"seed pairs: {by_seed:.4f}"


@pytest.mark.parametrize("spending", SPENDINGS)
def test_looks_at_3_6_9_units_hold_alpha_with_skewed_differences(spending):
    """Centred lognormal unit differences (sigma 0.2: skewness about 0.6, the size the committed
    reports' paired differences show). A t interval over 3 to 9 units is not robust to much stronger
    skew, and no test of a mean holds its level over every skewed distribution (Bahadur & Savage
    1956): the design is checked at the skew the data have."""
    sigma = 0.2
    rng = np.random.default_rng(22)
    d = np.exp(sigma * rng.standard_normal((UNIT_EXPERIMENTS, 9))) - math.exp(sigma**2 / 2)
    rate = _ever_excludes_zero(d, boundaries(look_schedule(9, 3), 9, ALPHA, spending))
    assert rate <= UNIT_LIMIT, f"{spending}: {rate:.4f}"


def test_equivalence_units_reach_the_power_by_the_bound():
    units = equivalence_units(0.01, 0.02, ALPHA)
    assert equivalence_power(0.01, 0.02, int(units), ALPHA) >= 0.8 > equivalence_power(0.01, 0.02, int(units) - 1, ALPHA)
    rng = np.random.default_rng(6)
    d = 0.02 * rng.standard_normal((20_000, int(units)))
    se = d.std(axis=1, ddof=1) / math.sqrt(units)
    critical = scipy_stats.t.isf(ALPHA, units - 1)
    declared = ((d.mean(axis=1) - critical * se > -0.01) & (d.mean(axis=1) + critical * se < 0.01)).mean()
    assert declared >= equivalence_power(0.01, 0.02, int(units), ALPHA) - 0.01  # the bound is a lower bound
