"""The statistics the papers report, on plain arrays: bootstrap SE and CI, paired tests, Holm.

Every function works on a stack of same-sized samples (one row per group), so a whole table is
computed in a few vectorised calls. Pairing and grouping live in `aggregate` and `compare`.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np

PairedTest = Literal["paired_t", "wilcoxon"]


def resample_counts(n: int, resamples: int, seed: int) -> np.ndarray:
    """How often each of n observations is drawn in each bootstrap resample, shape (resamples, n).

    The generator is seeded by (seed, n) alone, so a group's bootstrap never depends on which
    other groups are analysed with it, nor on the order they come in.
    """
    rng = np.random.default_rng([seed, n])
    draws = rng.integers(0, n, size=(resamples, n))
    offsets = n * np.arange(resamples)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=resamples * n).reshape(resamples, n)


def bootstrap_means(samples: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Means of `resamples` non-parametric bootstrap resamples of each row, shape (groups, resamples)."""
    groups, n = samples.shape
    weights = resample_counts(n, resamples, seed).T / n
    return samples @ weights


def bootstrap_summary(
    samples: np.ndarray, resamples: int, seed: int, confidence: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bootstrap standard error of the mean and percentile interval for each row.

    Returns (se, low, high), each of shape (groups,). Rows with fewer than two observations get NaN:
    one value says nothing about spread.
    """
    groups, n = samples.shape
    if n < 2 or groups == 0:
        nan = np.full(groups, np.nan)
        return nan, nan.copy(), nan.copy()
    means = bootstrap_means(samples, resamples, seed)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail], axis=1)
    return means.std(axis=1, ddof=1), low, high


def paired_test(a: np.ndarray, b: np.ndarray, test: PairedTest) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided paired test of each row of a against the same row of b (columns are matched pairs).

    Returns (statistic, p_value) per row; NaN where the test is undefined (fewer than two pairs,
    or a t-test on identical differences).
    """
    from scipy import stats

    groups, n = a.shape
    if n < 2:
        nan = np.full(groups, np.nan)
        return nan, nan.copy()
    with warnings.catch_warnings():
        # Constant differences make t = 0/0: SciPy warns and returns NaN, which is what we report.
        warnings.simplefilter("ignore", RuntimeWarning)
        if test == "paired_t":
            result = stats.ttest_rel(a, b, axis=1)
        elif test == "wilcoxon":
            result = stats.wilcoxon(a, b, axis=1)
        else:
            raise ValueError(f"unknown paired test {test!r}; choose paired_t or wilcoxon")
    return np.asarray(result.statistic, dtype=float), np.asarray(result.pvalue, dtype=float)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down); NaN p-values stay NaN and do not count in m."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    present = np.flatnonzero(~np.isnan(p))
    m = present.size
    if m == 0:
        return adjusted
    order = present[np.argsort(p[present], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return adjusted


POWER = 0.8  # the conventional target: a real effect of the stated size is seen 4 times in 5
WILCOXON_EFFICIENCY = 3 / np.pi  # asymptotic relative efficiency of the signed-rank test to the t-test (normal data)
MAX_PAIRS = 100_000  # n_needed beyond this is reported as missing (no realistic experiment reaches it)


def paired_t_power(effect: float, sd: float, n: float, alpha: float) -> float:
    """Power of the two-sided paired t-test to detect a mean difference `effect` with n pairs whose
    differences have standard deviation `sd` (noncentral t with n - 1 degrees of freedom)."""
    from scipy import stats

    df = n - 1.0
    noncentrality = effect / (sd / np.sqrt(n))
    critical = stats.t.ppf(1.0 - alpha / 2.0, df)
    upper = stats.nct.sf(critical, df, noncentrality)
    # The opposite tail vanishes for a large noncentrality, where scipy's nct.cdf can return NaN (df 1).
    lower = np.nan_to_num(stats.nct.cdf(-critical, df, noncentrality), nan=0.0)
    return float(upper + lower)


def minimum_detectable_effect(sd: float, n: float, alpha: float, power: float = POWER) -> float:
    """Smallest mean difference the paired t-test detects with probability `power` (NaN when undefined)."""
    from scipy.optimize import brentq

    if not (n >= 2 and np.isfinite(sd) and sd > 0):
        return float("nan")
    upper = sd
    while paired_t_power(upper, sd, n, alpha) < power:
        upper *= 2.0
    return float(brentq(lambda effect: paired_t_power(effect, sd, n, alpha) - power, 0.0, upper, xtol=sd * 1e-9))


def pairs_needed(effect: float, sd: float, alpha: float, power: float = POWER) -> float:
    """Fewest pairs with which the paired t-test detects `effect` with probability `power`.

    NaN when there is nothing to detect (effect 0), no spread to judge it by, or more than MAX_PAIRS.
    """
    effect = abs(effect)
    if not (np.isfinite(effect) and effect > 0 and np.isfinite(sd) and sd > 0):
        return float("nan")
    low, high = 1, 2
    while paired_t_power(effect, sd, high, alpha) < power:
        low, high = high, high * 2
        if high > MAX_PAIRS:
            return float("nan")
    while high - low > 1:  # power grows with n: bisect for the first n that reaches it
        middle = (low + high) // 2
        low, high = (low, middle) if paired_t_power(effect, sd, middle, alpha) >= power else (middle, high)
    return float(high)


def power_analysis(
    delta: np.ndarray, sd: np.ndarray, n: np.ndarray, alpha: float, test: PairedTest
) -> tuple[np.ndarray, np.ndarray]:
    """(mde, n_needed) per test at `POWER`, from the observed mean and sd of the paired differences.

    The Wilcoxon test is sized as a t-test with n x 3/pi effective pairs (its efficiency relative to
    the t-test under normal differences), so it needs pi/3 times the pairs.
    """
    efficiency = WILCOXON_EFFICIENCY if test == "wilcoxon" else 1.0
    mde = np.array([minimum_detectable_effect(s, k * efficiency, alpha) for s, k in zip(sd, n)], dtype=float)
    needed = np.array([pairs_needed(d, s, alpha) for d, s in zip(delta, sd)], dtype=float)
    return mde, np.ceil(needed / efficiency)
