"""Replicate until a claim is decided: a group-sequential design for paired replicates.

A claim compares a method with its partner by paired units (a partition, or a seed where the
arms have no partitions: `analysis.verdicts`), unit-level differences d_i = method - partner.
Rather than a fixed number of seeds, pairs are added in blocks and the claim is looked at after
each block; it stops as soon as its interval decides it. Looking repeatedly at a fixed level
would reject a true null far more often than alpha, so each look uses a stricter level, chosen so
that over all looks a true zero difference is excluded at most alpha of the time (Lan & DeMets
1983, alpha spending; Jennison & Turnbull 2000, ch. 7 and 9):

  looks        n_1 < ... < n_K units (`look_schedule`: every `look_every` units, the first at
               MINIMUM_PAIRS or more, the last at max_seeds); information fraction t_k = n_k / max
  boundaries   each look's critical t and nominal level from an alpha-spending function
               (`analysis.boundaries`: O'Brien-Fleming or Pocock type, computed for the paired t
               statistic itself so that few seeds keep the overall level)
  interval     the repeated confidence interval mean(d) -/+ t_k sd(d) / sqrt(n_k) over the first
               n_k differences (unit order), which covers the true difference at every look
               simultaneously with probability 1 - alpha (normal differences)
  verdict      at each look, the claim's `VerdictRule` on that interval: a superior claim is
               decided once the interval excludes 0 (reproduced or opposite), an equivalent one
               once it lies within the margin band or wholly beyond it (a repeated interval
               covers at every look, so either decision may stop the claim: Jennison & Turnbull
               2000, ch. 9); no look after the deciding one counts

MINIMUM_PAIRS is 3: a first look at 2 pairs has one degree of freedom, where the t critical
value at an early look's level is in the hundreds (O'Brien-Fleming: about 3e5), so the look can
decide nothing and only spends alpha.

`alpha` is the claim's two-sided level; a caller that controls a family of claims passes the
level it allots to this one. Everything here is plain data and deterministic by seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from nerplat.analysis.boundaries import SequentialDesign
from nerplat.analysis.stats import POWER, paired_t_power, pairs_needed

MINIMUM_PAIRS = 3  # the first look's fewest pairs: 2 degrees of freedom
SIMULATIONS = 10_000  # Monte Carlo experiments behind operating characteristics: a standard error near 0.5% of a rate

Verdict = Literal["reproduced", "opposite", "extends", "does not extend", "equivalent", "not equivalent", "inconclusive"]


def look_schedule(max_seeds: int, look_every: int, minimum: int = MINIMUM_PAIRS) -> tuple[int, ...]:
    """Pair counts at which a claim is looked at: the multiples of `look_every` from `minimum` on,
    and `max_seeds` last (so the whole alpha is spent by the final look).

    >>> look_schedule(20, 3)
    (3, 6, 9, 12, 15, 18, 20)
    """
    if minimum < 2:
        raise ValueError(f"minimum {minimum} pairs: a paired interval needs at least 2")
    if look_every < 1:
        raise ValueError(f"look_every {look_every}: looks are taken every 1 or more seeds")
    if max_seeds < minimum:
        raise ValueError(f"max_seeds {max_seeds} is below the first look's minimum of {minimum} pairs; raise max_seeds")
    looks = [n for n in range(look_every, max_seeds, look_every) if n >= minimum]
    return (*looks, max_seeds)


@dataclass(frozen=True)
class VerdictRule:
    """How an interval for the mean difference decides a claim.

    Superior (`side` +1 or -1, the side of zero the paper puts method - partner on): the interval
    wholly on that side -> reproduced, wholly on the other -> opposite, else inconclusive. In a
    setting the paper never ran (`extrapolation`) the same intervals read extends / does not extend:
    such a finding says nothing against the paper.
    Equivalent (`margin` m): the interval within (-m, m) -> equivalent (two one-sided tests at
    half the interval's level each, Schuirmann 1987), wholly at or beyond m or -m -> not
    equivalent, else inconclusive.
    """

    side: int = 0
    margin: float | None = None
    extrapolation: bool = False

    def __post_init__(self) -> None:
        if (
            (self.margin is None) == (self.side == 0) or self.side not in (-1, 0, 1)
            or (self.margin is not None and not self.margin > 0)
        ):
            raise ValueError(
                f"a verdict rule is a side (+1 or -1) or a margin > 0, not side {self.side} and margin {self.margin}"
            )

    @property
    def verdicts(self) -> tuple[Verdict, Verdict, Verdict]:
        """The verdict of each code `codes` returns: undecided, for the paper, against it."""
        if self.margin is None:
            return ("inconclusive", "extends", "does not extend") if self.extrapolation else (
                "inconclusive", "reproduced", "opposite")
        return ("inconclusive", "equivalent", "not equivalent")

    def codes(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """The rule on arrays of intervals, as indices into `verdicts`."""
        if self.margin is None:
            paper_side, other_side = (low > 0, high < 0) if self.side > 0 else (high < 0, low > 0)
        else:
            paper_side, other_side = (low > -self.margin) & (high < self.margin), (low >= self.margin) | (high <= -self.margin)
        return np.where(paper_side, 1, np.where(other_side, 2, 0))

    def verdict(self, low: float, high: float) -> Verdict:
        """The verdict of one interval."""
        return self.verdicts[int(self.codes(np.asarray(low), np.asarray(high)))]


def repeated_intervals(differences: np.ndarray, design: SequentialDesign) -> tuple[np.ndarray, np.ndarray]:
    """Repeated confidence intervals at every look the differences reach.

    `differences` has the units on its last axis (unit order), any leading axes are independent
    experiments. Returns (low, high), each of shape (..., looks reached).
    """
    d = np.asarray(differences, dtype=float)
    if not np.isfinite(d).all():
        raise ValueError("differences must be finite numbers (one per seed pair)")
    reached = [k for k, n in enumerate(design.looks) if n <= d.shape[-1]]
    low = np.empty((*d.shape[:-1], len(reached)))
    high = np.empty_like(low)
    for k in reached:
        n = design.looks[k]
        first = d[..., :n]
        mean = first.mean(axis=-1)
        critical = design.critical_t[k]
        half = np.inf if math.isinf(critical) else critical * first.std(axis=-1, ddof=1) / math.sqrt(n)
        low[..., k], high[..., k] = mean - half, mean + half
    return low, high


def repeated_interval(differences: Sequence[float], look_index: int, design: SequentialDesign) -> tuple[float, float]:
    """(low, high) of the repeated interval at look `look_index` (0-based) from the first looks[k] differences."""
    n = design.looks[look_index]
    if len(differences) < n:
        raise ValueError(f"look {look_index} needs {n} pairs, {len(differences)} given")
    low, high = repeated_intervals(np.asarray(differences, dtype=float)[:n], design)
    return float(low[look_index]), float(high[look_index])


@dataclass(frozen=True)
class Look:
    """One look at a claim: its 0-based index, pairs, nominal level, repeated interval and verdict."""

    index: int
    pairs: int
    nominal_alpha: float
    ci_low: float
    ci_high: float
    verdict: Verdict


@dataclass(frozen=True)
class SequentialDecision:
    """Where a claim stands. `verdict` is the deciding look's, else inconclusive; `decided_look`
    (0-based) and `decided_pairs` are None while undecided. `looks` lists the looks taken, up to
    and including the deciding one. `next_pairs` is the pair count the next look needs: None once
    decided or when the last look has been taken (the claim stays inconclusive)."""

    verdict: Verdict
    decided_look: int | None
    decided_pairs: int | None
    looks: tuple[Look, ...]
    next_pairs: int | None


def decide(differences: Sequence[float], rule: VerdictRule, design: SequentialDesign) -> SequentialDecision:
    """Follow the design over the differences (unit order) so far: stop at the first deciding look.

    Differences beyond the deciding look (more units run for another claim sharing an arm) do not
    change the decision.
    """
    d = np.asarray(differences, dtype=float)
    low, high = repeated_intervals(d, design)
    codes = rule.codes(low, high)
    taken: list[Look] = []
    for k in range(low.shape[-1]):
        verdict = rule.verdicts[int(codes[k])]
        taken.append(Look(k, design.looks[k], design.nominal_alpha[k], float(low[k]), float(high[k]), verdict))
        if verdict != "inconclusive":
            return SequentialDecision(verdict, k, design.looks[k], tuple(taken), None)
    remaining = design.looks[len(taken) :]
    return SequentialDecision("inconclusive", None, None, tuple(taken), remaining[0] if remaining else None)


@dataclass(frozen=True)
class OperatingCharacteristics:
    """How a design behaves for one claim, from simulated experiments with normal differences.

    Shares of experiments whose final verdict is for the paper (reproduced, equivalent) / against
    it (opposite, not equivalent) / inconclusive; `rejects_zero` the share decided by an interval
    that excludes 0 (either side: under a true null, a superior claim's false-positive rate);
    `expected_pairs` the mean units at stopping (the last look for an undecided claim);
    `decided_by_look[k]` the share decided at look k.
    """

    expected_pairs: float
    for_paper: float
    against_paper: float
    inconclusive: float
    rejects_zero: float
    decided_by_look: tuple[float, ...]


def operating_characteristics(
    true_effect: float, sd: float, rule: VerdictRule, design: SequentialDesign, simulations: int = SIMULATIONS, seed: int = 0
) -> OperatingCharacteristics:
    """Simulate `simulations` experiments of design.max_pairs differences ~ N(true_effect, sd) and
    follow the design on each (vectorised: one repeated interval per look for all of them)."""
    rng = np.random.default_rng(seed)
    differences = true_effect + sd * rng.standard_normal((simulations, design.looks[-1]))
    low, high = repeated_intervals(differences, design)
    codes = rule.codes(low, high)
    decided = codes != 0
    ever = decided.any(axis=1)
    first = np.where(ever, decided.argmax(axis=1), len(design.looks) - 1)
    rows = np.arange(simulations)
    final = np.where(ever, codes[rows, first], 0)
    excludes_zero = (low[rows, first] > 0) | (high[rows, first] < 0)
    shares = np.bincount(final, minlength=3) / simulations
    by_look = np.bincount(first[ever], minlength=len(design.looks)) / simulations
    return OperatingCharacteristics(
        expected_pairs=float(np.asarray(design.looks)[first].mean()),
        for_paper=float(shares[1]),
        against_paper=float(shares[2]),
        inconclusive=float(shares[0]),
        rejects_zero=float((ever & excludes_zero).mean()),
        decided_by_look=tuple(float(share) for share in by_look),
    )


def units_for_power(effect: float, sd: float, alpha: float, power: float = POWER) -> float:
    """Units (unit-level paired differences of standard deviation `sd`) a single paired t-test at
    `alpha` needs to detect `effect` with probability `power`; NaN when undefined (no effect, no
    spread, or beyond `stats.MAX_PAIRS`). A sequential design needs a few more at its last look."""
    return pairs_needed(effect, sd, alpha, power)


def design_power(effect: float, sd: float, units: int, alpha: float) -> float:
    """Chance that a paired t-test at `alpha` over `units` unit-level differences of standard
    deviation `sd` detects a true mean difference `effect`: the fixed design of that many units,
    an upper bound for a sequential design that ends there (its earlier looks spend some alpha).
    NaN when undefined (fewer than 2 units, no spread, or no effect)."""
    if not (units >= 2 and np.isfinite(sd) and sd > 0 and np.isfinite(effect) and effect != 0):
        return math.nan
    return paired_t_power(effect, sd, units, alpha)


def equivalence_power(margin: float, sd: float, units: int, alpha: float) -> float:
    """Chance that two one-sided paired t-tests at `alpha` each (a TOST) over `units` unit-level
    differences of standard deviation `sd` declare |difference| < `margin` when the true difference
    is 0: at least 2 p1 - 1, p1 the power of each one-sided test (the bound returned). NaN where
    `design_power` is."""
    one_sided = design_power(margin, sd, units, 2.0 * alpha)
    return one_sided if math.isnan(one_sided) else max(0.0, 2.0 * one_sided - 1.0)


def equivalence_units(margin: float, sd: float, alpha: float, power: float = POWER) -> float:
    """Units a TOST at `alpha` per side needs to declare equivalence within `margin` with
    probability `power` when the true difference is 0 (by the bound of `equivalence_power`)."""
    return units_for_power(margin, sd, 2.0 * alpha, (1.0 + power) / 2.0)
