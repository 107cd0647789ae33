"""Group-sequential boundaries: the spending functions, published boundaries, a multivariate-normal
oracle, the t boundaries' closed first look and their precision, and the stage-wise p."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from nerplat.analysis.boundaries import boundaries, obrien_fleming, pocock, spending_function, stagewise_p
from nerplat.analysis.sequential import look_schedule

ALPHA = 0.05
SPENDINGS = ["obrien_fleming", "pocock"]


def five_equal_looks(spending: str):
    return boundaries([2, 4, 6, 8, 10], 10, ALPHA, spending)


# --- spending and arguments ------------------------------------------------------------------


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
    from nerplat.analysis import boundaries as module

    coarse = boundaries(looks, max_pairs, alpha, "pocock").critical_t
    module._design.cache_clear()
    module._t_chain.cache_clear()
    for name in ("STATE_CELLS", "SINGLE_STATE_CELLS", "RHO_NODES"):
        monkeypatch.setattr(module, name, 2 * getattr(module, name))
    fine = boundaries(looks, max_pairs, alpha, "pocock").critical_t
    module._design.cache_clear()
    module._t_chain.cache_clear()
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
