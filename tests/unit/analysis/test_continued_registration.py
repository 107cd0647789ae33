"""More units later are more looks of the same registered design, never a fresh alpha: k runs of one
registration, each stopped for budget at some look and continued by the next on the next units,
keep the claim's type-I error at its registered level; judging each continuation afresh does not.

Simulated under the null (unit-level differences ~ N(0, 1)), vectorised and seeded: each experiment's
runs stop at looks drawn at random (the budget), and the claim is rejected at the first look any
run took whose repeated interval (`sequential.repeated_intervals` with `registrations.registered_design`)
excludes 0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from nerplat.analysis.registrations import Registration, registered_design
from nerplat.analysis.sequential import repeated_intervals

EXPERIMENTS = 20_000
RUNS = 3  # k continued runs of one registration


def registration(spending: str) -> Registration:
    return Registration(
        claim_id="c", digest="d", looks=(4, 8, 12, 16, 20), max_units=20, spending=spending, alpha=0.05,
        units=tuple(range(20)), unit="seed", metric="test_micro_f1", path=None, intact=True,  # type: ignore[arg-type]
    )


def budget_stops(rng: np.random.Generator, looks: int) -> np.ndarray:
    """Per experiment, the last look (0-based) each of RUNS runs reaches: increasing, the last run at the final look."""
    stops = np.sort(rng.integers(0, looks - 1, size=(EXPERIMENTS, RUNS - 1)), axis=1)
    return np.concatenate([stops, np.full((EXPERIMENTS, 1), looks - 1)], axis=1)


def continued_rejections(registered: Registration, seed: int) -> tuple[float, float]:
    """Type-I error of the registered design across continued runs, and of a fresh fixed test per run."""
    rng = np.random.default_rng(seed)
    differences = rng.standard_normal((EXPERIMENTS, registered.max_units))
    low, high = repeated_intervals(differences, registered_design(registered))
    excluded = (low > 0) | (high < 0)  # per look: the registered boundaries, whichever run took the look
    stops = budget_stops(rng, len(registered.looks))
    taken = np.arange(len(registered.looks))[None, :] <= stops[:, -1:]
    registered_rate = float((excluded & taken).any(axis=1).mean())
    units = np.asarray(registered.looks)[stops]  # each run's cumulative units when it stopped
    fresh = np.zeros(EXPERIMENTS, dtype=bool)
    for run in range(RUNS):  # each run's end judged as a new study at the full alpha
        n = units[:, run]
        mask = np.arange(registered.max_units)[None, :] < n[:, None]
        mean = (differences * mask).sum(axis=1) / n
        sd = np.sqrt(((differences - mean[:, None]) ** 2 * mask).sum(axis=1) / (n - 1))
        fresh |= np.abs(mean) / (sd / np.sqrt(n)) > stats.t.isf(registered.alpha / 2, n - 1)
    return registered_rate, float(fresh.mean())


@pytest.mark.parametrize("spending", ["pocock", "obrien_fleming"])
def test_continued_runs_keep_the_registered_level_and_fresh_alphas_do_not(spending):
    registered = registration(spending)
    rate, fresh = continued_rejections(registered, seed=7)
    margin = 3 * math.sqrt(registered.alpha * (1 - registered.alpha) / EXPERIMENTS)  # three Monte Carlo standard errors
    assert rate <= registered.alpha + margin
    assert fresh > registered.alpha + margin  # the mistake the registration prevents: each run spends alpha anew
