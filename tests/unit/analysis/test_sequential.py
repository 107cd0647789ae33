"""The group-sequential design: published boundaries, a multivariate-normal oracle, the t boundaries'
closed first look and their precision, the stage-wise p, the false-positive rate of 20,000 simulated
null experiments, and stopping."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from nerplat.analysis.sequential import (
    boundaries,
    decide,
    look_schedule,
    obrien_fleming,
    operating_characteristics,
    pocock,
    repeated_interval,
    repeated_intervals,
    spending_function,
    stagewise_p,
    VerdictRule,
    design_power,
    equivalence_power,
    equivalence_units,
    units_for_power,
)

ALPHA = 0.05
SPENDINGS = ["obrien_fleming", "pocock"]
NULL_EXPERIMENTS = 20_000


def five_equal_looks(spending: str):
    return boundaries([2, 4, 6, 8, 10], 10, ALPHA, spending)


# --- spending and schedule -------------------------------------------------------------------


@pytest.mark.parametrize("spend", [obrien_fleming, pocock])
def test_spending_grows_from_nothing_to_alpha(spend):
    t = np.linspace(0.01, 1.0, 50)
    spent = spend(t, ALPHA)
    assert (np.diff(spent) > 0).all()
    assert spend(1.0, ALPHA) == pytest.approx(ALPHA, rel=1e-12)
    assert spent[0] < 0.002


def test_obrien_fleming_spends_less_early_than_pocock():
    assert obrien_fleming(0.2, ALPHA) < 1e-5 < 0.01 < pocock(0.2, ALPHA)


def test_an_unknown_spending_function_names_the_valid_ones():
    with pytest.raises(ValueError, match="obrien_fleming, pocock"):
        spending_function("haybittle")


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


@pytest.mark.parametrize(
    ("looks", "max_pairs", "alpha", "message"),
    [([4, 3], 10, ALPHA, "increasing order"), ([1, 4], 10, ALPHA, "2 to max_pairs"), ([3, 12], 10, ALPHA, "2 to max_pairs"),
     ([3, 6], 6, 1.5, "strictly between 0 and 1")],
)
def test_bad_boundaries_arguments_are_refused(looks, max_pairs, alpha, message):
    with pytest.raises(ValueError, match=message):
        boundaries(looks, max_pairs, alpha, "pocock")


# --- boundaries ------------------------------------------------------------------------------


def test_obrien_fleming_boundaries_match_published_values():
    # ldbounds (Reboussin, DeMets, Kim & Lan 2000) and gsDesign's sfLDOF: 5 equally spaced looks,
    # two-sided 0.05 (0.025 a side), and gsDesign's default 3 looks
    assert five_equal_looks("obrien_fleming").critical_z == pytest.approx([4.8769, 3.3569, 2.6803, 2.2898, 2.0310], abs=2e-4)
    assert boundaries([6, 12, 18], 18, ALPHA, "obrien_fleming").critical_z == pytest.approx([3.7103, 2.5114, 1.9930], abs=2e-4)


def test_pocock_boundaries_match_published_values():
    # gsDesign's sfLDPocock, 5 equally spaced looks, two-sided 0.05
    assert five_equal_looks("pocock").critical_z == pytest.approx([2.4380, 2.4268, 2.4102, 2.3966, 2.3860], abs=2e-4)


@pytest.mark.parametrize("spending", SPENDINGS)
def test_z_boundaries_spend_alpha_by_a_multivariate_normal_oracle(spending):
    """Unequal looks: 1 - P(|Z_j| < c_j for all j <= k) from scipy's multivariate normal CDF
    (Z_j standardised Brownian motion, corr(Z_i, Z_j) = sqrt(t_i / t_j)) equals alpha*(t_k)."""
    looks, max_pairs = [3, 7, 12, 20], 20
    design = boundaries(looks, max_pairs, ALPHA, spending)
    t = np.array(looks) / max_pairs
    correlation = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    for k in range(len(looks)):
        c = np.array(design.critical_z[: k + 1])
        normal = scipy_stats.multivariate_normal(np.zeros(k + 1), correlation[: k + 1, : k + 1], abseps=1e-6, releps=1e-6)
        inside = normal.cdf(c, lower_limit=-c, rng=np.random.default_rng(k))
        assert 1.0 - inside == pytest.approx(spending_function(spending)(t[k], ALPHA), abs=2e-5)


@pytest.mark.parametrize("spending", SPENDINGS)
def test_t_boundaries_are_the_t_tests_of_each_looks_level(spending):
    design = boundaries(look_schedule(20, 3), 20, ALPHA, spending)
    for critical_t, nominal, n in zip(design.critical_t, design.nominal_alpha, design.looks):
        assert nominal == pytest.approx(2 * scipy_stats.t.sf(critical_t, n - 1), rel=1e-9)
    # the first look is a t-test alone: its boundary is the t quantile at the first spend, in closed form
    first = spending_function(spending)(design.looks[0] / 20, ALPHA)
    assert design.nominal_alpha[0] == pytest.approx(first, rel=1e-9)
    assert design.critical_t[0] == pytest.approx(scipy_stats.t.isf(first / 2, design.looks[0] - 1), rel=1e-12)
    # with few seeds the t boundary sits above the z boundary (the variance is estimated)
    assert all(t > z for t, z in zip(design.critical_t, design.critical_z) if math.isfinite(z))


def test_with_many_pairs_the_t_boundaries_approach_the_conversion_of_the_z_boundaries():
    design = boundaries([100, 200, 300], 300, ALPHA, "pocock")
    converted = [scipy_stats.t.isf(scipy_stats.norm.sf(z), n - 1) for z, n in zip(design.critical_z, design.looks)]
    assert design.critical_t == pytest.approx(converted, abs=0.02)


@pytest.mark.parametrize(("n", "m"), [(3, 1), (5, 2), (6, 6), (12, 12)])
def test_the_u_chain_kernel_reproduces_the_t_distribution_of_the_next_look(n, m):
    """With nothing spent at a first look of n pairs, the chain's crossing probability at n + m pairs
    is the marginal paired t tail: an oracle for the kernel (rho, v and their independence)."""
    design = boundaries([n, n + m], n + m, 1e-12, "obrien_fleming")  # spends (next to) nothing at look 1
    for t in (2.0, 4.0):
        assert stagewise_p(design, 1, t) == pytest.approx(2 * scipy_stats.t.sf(t, n + m - 1), rel=2e-3)


@pytest.mark.parametrize(("looks", "max_pairs", "alpha"), [((6, 12, 18), 18, ALPHA / 6), ((3, 4), 4, ALPHA)])
def test_t_boundaries_are_within_0_001_of_a_finer_recursion(monkeypatch, looks, max_pairs, alpha):
    """The same recursion on twice the cells and quadrature nodes moves no boundary by 0.0005 (its
    errors shrink with the grid, so the coarse one is within 0.001)."""
    from nerplat.analysis import sequential

    coarse = boundaries(looks, max_pairs, alpha, "pocock").critical_t
    sequential._design.cache_clear()
    sequential._t_chain.cache_clear()
    for name in ("STATE_CELLS", "SINGLE_STATE_CELLS", "RHO_NODES"):
        monkeypatch.setattr(sequential, name, 2 * getattr(sequential, name))
    fine = boundaries(looks, max_pairs, alpha, "pocock").critical_t
    sequential._design.cache_clear()
    sequential._t_chain.cache_clear()
    assert coarse == pytest.approx(fine, abs=5e-4)


def test_the_t_boundaries_spend_alpha_by_simulation():
    """200,000 null experiments of 9 pairs, looks at 3, 6, 9 (Pocock at 0.05): the share first crossing
    at each look is the spent increment within 4 Monte Carlo standard errors."""
    design = boundaries([3, 6, 9], 9, ALPHA, "pocock")
    d = np.random.default_rng(31).standard_normal((200_000, 9))
    crossed = np.zeros(d.shape[0], dtype=bool)
    spent = pocock(np.array([3, 6, 9]) / 9, ALPHA)
    for k, n in enumerate(design.looks):
        t = np.abs(d[:, :n].mean(axis=1)) / (d[:, :n].std(axis=1, ddof=1) / math.sqrt(n))
        crossed |= t >= design.critical_t[k]
        assert crossed.mean() == pytest.approx(spent[k], abs=4 * math.sqrt(spent[k] / d.shape[0]))


def test_the_stagewise_p_spends_what_the_boundary_does_and_orders_by_look():
    design = boundaries([3, 6, 9], 9, ALPHA, "pocock")
    spent = pocock(np.array([3, 6, 9]) / 9, ALPHA)
    for k, c in enumerate(design.critical_t):
        assert stagewise_p(design, k, c) == pytest.approx(spent[k], abs=1e-6)
        assert stagewise_p(design, k, -c) == stagewise_p(design, k, c)  # two-sided
    assert stagewise_p(design, 0, 1.0) == pytest.approx(2 * scipy_stats.t.sf(1.0, 2))
    # a later look's p is never below what the earlier looks spent, however large the statistic
    assert spent[0] < stagewise_p(design, 1, 50.0) < stagewise_p(design, 1, 5.0) < stagewise_p(design, 1, 2.0)


def test_designs_are_deterministic():
    assert boundaries((3, 6, 9), 9, ALPHA, "pocock") == boundaries([3, 6, 9], 9, ALPHA, "pocock")


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
