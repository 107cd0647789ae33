"""Two-sided symmetric group-sequential boundaries by alpha spending, for the paired t statistic.

A design looks at a claim after n_1 < ... < n_K paired units (`analysis.sequential.look_schedule`),
at information fractions t_k = n_k / max. Each look k gets a critical value such that, over all
looks, a true zero difference is excluded at most alpha of the time (Lan & DeMets 1983, alpha
spending; Jennison & Turnbull 2000, ch. 7 and 9); `analysis.sequential` turns them into repeated
intervals and verdicts.

  spending     alpha*(t), the two-sided type I error spent by information t, alpha*(1) = alpha,
               half of it on each side (the boundaries are symmetric):
               obrien_fleming  2 (2 - 2 Phi(z_{alpha/4} / sqrt(t)))  (spends little early)
               pocock          alpha ln(1 + (e - 1) t)               (spends evenly)
               Each side spends alpha/2 by Lan & DeMets's one-sided functions, as ldbounds,
               gsDesign (sfLDOF, sfLDPocock) and rpact do for a two-sided symmetric design, so
               the boundaries match theirs (5 equal looks at 0.05: 4.877, 3.357, 2.680, 2.290,
               2.031). Lan & DeMets's O'Brien-Fleming form with the two-sided alpha inside,
               2 - 2 Phi(z_{alpha/2} / sqrt(t)), spends more early (4.383 ... 2.063); Pocock's
               form is linear in alpha, so both readings agree on it.
  boundaries   critical z_k such that a Brownian motion's standardised value |Z_k| first
               crosses at look k with probability alpha*(t_k) - alpha*(t_{k-1}) under the null,
               by the recursive numerical integration of Armitage, McPherson & Rowe (1969) on
               a grid (Simpson's rule over the continuation region of each look)
  small n      the z boundaries assume a known variance; with a few seeds it is estimated. The
               usual conversion, a paired t-test at each look's nominal z level 2 (1 - Phi(z_k))
               (the "significance level approach", Jennison & Turnbull 2000, ch. 3 on unknown
               variance), matches each look alone but not the looks together: from a few pairs it
               excludes a true zero at some look more often than alpha. So the same spending is
               applied to the paired t statistics themselves (`_boundaries_t`): the first look's
               boundary is the t quantile at the first spend, 2 P(T_{n_1 - 1} > c_1) = alpha*(t_1);
               later ones come from the recursion of Armitage, McPherson & Rowe (1969) carried on
               the one statistic the t-test needs under the null. With n differences d and
               u = sum(d) / (sqrt(n) |d|) (the cosine between d and the vector of ones), the paired
               t is sqrt(n - 1) u / sqrt(1 - u^2). Normal differences make d's direction uniform on
               the sphere and independent of |d|, so u does not depend on the unknown sd and the
               u's of successive looks form a Markov chain: m new differences give
               u' = (rho sqrt(n) u + sqrt(1 - rho^2) sqrt(m) v) / sqrt(n + m), rho^2 ~
               Beta(n / 2, m / 2) (the old share of the squared length) and v the cosine of the m
               new ones, (v + 1) / 2 ~ Beta((m - 1) / 2, (m - 1) / 2) (v = +-1 for m = 1), all
               independent of the past. The surviving mass of u is carried on STATE_CELLS cells of
               the continuation region; the crossing probability for a candidate boundary integrates
               the kernel by Gauss-Jacobi quadrature over rho^2 (RHO_NODES nodes) with v's
               distribution function exact (for m = 1, over the angle of (rho, sqrt(1 - rho^2)) with
               rho's distribution function exact, on SINGLE_STATE_CELLS cells); the boundary is its
               root. Precision: within 0.001 in t of the same recursion at four times the cells
               and nodes (tests/unit/analysis/test_boundaries.py). `nominal_alpha` is the level of
               each look's t-test: 2 P(T_{n_k - 1} > critical t_k).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

STATE_CELLS = 256  # cells carrying u's surviving mass between looks of two or more new units each
SINGLE_STATE_CELLS = 1024  # the same between looks one unit apart, whose kernel is not smooth (m = 1 above)
RHO_NODES = 16  # Gauss-Jacobi nodes over rho^2 per kernel evaluation
TABLE_POINTS = 1 << 14  # points of the tabulated distribution functions the kernel interpolates
GRID_STEPS_PER_SD = 32  # integration grid: steps per standard deviation of the smallest increment between looks
TAIL_SD = 10.0  # the continuation region is cut at this many standard deviations (mass beyond ~1e-23)


def obrien_fleming(t: float | np.ndarray, alpha: float) -> float | np.ndarray:
    """Two-sided alpha spent by information t, O'Brien-Fleming type (Lan & DeMets 1983) on each
    side at alpha/2: 2 (2 - 2 Phi(z_{alpha/4} / sqrt(t)))."""
    from scipy.stats import norm

    t = np.asarray(t, dtype=float)
    with np.errstate(divide="ignore"):
        spent = 4.0 * norm.sf(norm.isf(alpha / 4.0) / np.sqrt(t))
    return spent[()] if spent.ndim == 0 else spent


def pocock(t: float | np.ndarray, alpha: float) -> float | np.ndarray:
    """Two-sided alpha spent by information t, Pocock type (Lan & DeMets 1983): alpha ln(1 + (e - 1) t)."""
    spent = alpha * np.log1p((math.e - 1.0) * np.asarray(t, dtype=float))
    return spent[()] if spent.ndim == 0 else spent


SPENDING_FUNCTIONS: dict[str, Callable[[float | np.ndarray, float], float | np.ndarray]] = {
    "obrien_fleming": obrien_fleming,
    "pocock": pocock,
}


def spending_function(name: str) -> Callable[[float | np.ndarray, float], float | np.ndarray]:
    """The spending function a spec names; a wrong name lists the valid ones."""
    try:
        return SPENDING_FUNCTIONS[name]
    except KeyError:
        raise ValueError(f"unknown spending function {name!r}; choose one of {', '.join(SPENDING_FUNCTIONS)}") from None


@dataclass(frozen=True)
class SequentialDesign:
    """Where a claim is looked at and how strict each look is. Per look k (same order as `looks`):
    `critical_z[k]` the boundary of the z statistic (known variance), `critical_t[k]` that of the
    paired t statistic with looks[k] - 1 degrees of freedom (the one the intervals use) and
    `nominal_alpha[k]` its two-sided level. An infinite boundary (level 0) can decide nothing."""

    looks: tuple[int, ...]
    max_pairs: int
    alpha: float
    spending: str
    nominal_alpha: tuple[float, ...]
    critical_z: tuple[float, ...]
    critical_t: tuple[float, ...]


def boundaries(looks: Sequence[int], max_pairs: int, alpha: float, spending: str) -> SequentialDesign:
    """The design of two-sided symmetric boundaries for looks after `looks` pairs out of `max_pairs`.

    Deterministic; the same arguments return the same (cached) design.
    """
    looks = tuple(int(n) for n in looks)
    if not looks or any(b <= a for a, b in zip(looks, looks[1:])):
        raise ValueError(f"looks {looks}: give one or more pair counts in increasing order")
    if looks[0] < 2 or looks[-1] > max_pairs:
        raise ValueError(f"looks {looks}: every look needs 2 to max_pairs ({max_pairs}) pairs")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha {alpha}: the two-sided level lies strictly between 0 and 1")
    spending_function(spending)
    return _design(looks, int(max_pairs), float(alpha), spending)


@functools.lru_cache(maxsize=64)
def _design(looks: tuple[int, ...], max_pairs: int, alpha: float, spending: str) -> SequentialDesign:
    from scipy.stats import t as student_t

    fractions = np.array(looks, dtype=float) / max_pairs
    spent = np.asarray(spending_function(spending)(fractions, alpha), dtype=float)
    critical_z = _boundaries_z(fractions, np.diff(spent, prepend=0.0))
    first = float(student_t.isf(spent[0] / 2.0, looks[0] - 1)) if spent[0] > 0 else math.inf  # closed form
    critical_t = [first] + [_t_of(u, n) for u, n in zip(_t_chain(looks, tuple(spent)).bounds[1:], looks[1:])]
    nominal = tuple(float(2.0 * student_t.sf(c, n - 1)) for c, n in zip(critical_t, looks))
    return SequentialDesign(looks, max_pairs, alpha, spending, nominal, tuple(critical_z), tuple(critical_t))


def _t_of(u: float, n: int) -> float:
    """The paired t of n differences whose cosine with the ones vector is u (module docstring)."""
    return math.inf if u >= 1.0 else math.sqrt(n - 1) * u / math.sqrt(1.0 - u * u)


def _u_of(t: float, n: int) -> float:
    return 1.0 if math.isinf(t) else t / math.sqrt(n - 1 + t * t)


@dataclass(frozen=True)
class _Chain:
    """The null recursion of u over a design's looks: `bounds[k]` the boundary on u at look k (1
    where nothing is spent), `states[k]` the cell midpoints and masses of u that have not crossed by
    look k (the mass is the probability of reaching look k + 1)."""

    bounds: tuple[float, ...]
    states: tuple[tuple[np.ndarray, np.ndarray], ...]


@functools.lru_cache(maxsize=64)
def _t_chain(looks: tuple[int, ...], spent: tuple[float, ...]) -> _Chain:
    """Boundaries on u such that the null probability of crossing by look k is spent[k]."""
    from scipy.optimize import brentq
    from scipy.stats import beta
    from scipy.stats import t as student_t

    first = looks[0]
    bound = _u_of(float(student_t.isf(spent[0] / 2.0, first - 1)) if spent[0] > 0 else math.inf, first)
    edges = np.linspace(-bound, bound, _cells(looks[1] - first if len(looks) > 1 else 2) + 1)
    shape = (first - 1) / 2.0
    state = ((edges[1:] + edges[:-1]) / 2.0, np.diff(beta.cdf((edges + 1.0) / 2.0, shape, shape)))
    bounds, states = [bound], [state]
    for k in range(1, len(looks)):
        n, m = looks[k - 1], looks[k] - looks[k - 1]
        kernel = _Kernel(n, m)
        points, mass = state
        spend = spent[k] - spent[k - 1]

        arguments = (kernel, points, mass, spend)
        if spend <= 0.0 or _excess(1.0 - 1e-15, *arguments) >= 0.0:
            bound = 1.0  # nothing (representable) to spend at this look
        else:
            bound = brentq(_excess, 0.0, 1.0 - 1e-15, args=arguments, xtol=1e-14, rtol=1e-14)
        edges = np.linspace(-bound, bound, _cells(looks[k + 1] - looks[k] if k + 1 < len(looks) else 2) + 1)
        state = ((edges[1:] + edges[:-1]) / 2.0, np.diff(kernel.cdf(points, edges), axis=1).T @ mass)
        bounds.append(bound)
        states.append(state)
    return _Chain(tuple(bounds), tuple(states))


def _crossing(u: float, kernel: _Kernel, points: np.ndarray, mass: np.ndarray) -> float:
    """Null probability that the surviving `mass` at `points` reaches |u'| >= u at the next look."""
    below = mass @ kernel.cdf(points, np.array([-u, u]))
    return float(below[0] + mass.sum() - below[1])


def _excess(u: float, kernel: _Kernel, points: np.ndarray, mass: np.ndarray, spend: float) -> float:
    return _crossing(u, kernel, points, mass) - spend


def _cells(step: int) -> int:
    return SINGLE_STATE_CELLS if step == 1 else STATE_CELLS


class _Kernel:
    """P(u' <= x | u) from n differences to n + m (module docstring)."""

    def __init__(self, n: int, m: int) -> None:
        from scipy.special import betainc, roots_jacobi

        self.n, self.m = n, m
        if m == 1:  # rho's distribution over the angle phi = arccos(rho): P(phi <= theta) = 1 - I(cos^2 theta)
            self.grid = np.linspace(0.0, math.pi / 2.0, TABLE_POINTS + 1)
            self.table = betainc(n / 2.0, 0.5, np.cos(self.grid) ** 2)
        else:  # v's distribution function, and Gauss-Jacobi nodes for rho^2 ~ Beta(n / 2, m / 2)
            self.grid = np.linspace(-1.0, 1.0, TABLE_POINTS + 1)
            self.table = betainc((m - 1) / 2.0, (m - 1) / 2.0, (self.grid + 1.0) / 2.0)
            nodes, weights = roots_jacobi(RHO_NODES, m / 2.0 - 1.0, n / 2.0 - 1.0)
            self.rho, self.weights = np.sqrt((1.0 + nodes) / 2.0), weights / weights.sum()

    def cdf(self, u: np.ndarray, x: np.ndarray) -> np.ndarray:
        """P(u' <= x[j] | u[i]), shape (len(u), len(x))."""
        n, m = self.n, self.m
        a = math.sqrt(n) * u[:, None, None]
        target = math.sqrt(n + m) * x[None, :, None]
        if m > 1:
            v = (target - a * self.rho) / (math.sqrt(m) * np.sqrt(1.0 - self.rho**2))
            return np.interp(v, self.grid, self.table) @ self.weights
        # v = +-1: a cos(phi) + v sin(phi) = r cos(phi - psi) <= target on phi in [0, pi/2]
        v = np.array([-1.0, 1.0])[None, None, :]
        r, psi = np.hypot(a, v), np.arctan2(v, a)
        gap = np.arccos(np.clip(target / r, -1.0, 1.0))

        def within(low: np.ndarray, high: np.ndarray) -> np.ndarray:
            return np.interp(low, self.grid, self.table) - np.interp(np.maximum(low, high), self.grid, self.table)

        two_pi = 2.0 * math.pi
        return (within(psi + gap - two_pi, psi - gap) + within(psi + gap, psi + two_pi - gap)).mean(axis=-1)


def stagewise_p(design: SequentialDesign, look: int, t: float) -> float:
    """The stage-wise ordering p-value (Jennison & Turnbull 2000, sec. 8.4) of stopping at look
    `look` (0-based) with paired t statistic `t`, two-sided: the null probability of crossing at an
    earlier look, or at this one with |T| at least |t|. At most alpha*(t_k) when |t| reaches the
    look's boundary; the p a sequential verdict's rule is equivalent to (p <= the design's alpha)."""
    from scipy.stats import t as student_t

    if not math.isfinite(t):
        return math.nan
    n = design.looks[look]
    fractions = np.array(design.looks, dtype=float) / design.max_pairs
    spent = np.asarray(spending_function(design.spending)(fractions, design.alpha), dtype=float)
    if look == 0:
        return float(2.0 * student_t.sf(abs(t), n - 1))
    points, mass = _t_chain(design.looks, tuple(spent)).states[look - 1]
    kernel = _Kernel(design.looks[look - 1], n - design.looks[look - 1])
    return float(spent[look - 1] + _crossing(_u_of(abs(t), n), kernel, points, mass))


def _boundaries_z(fractions: np.ndarray, increments: np.ndarray) -> list[float]:
    """Critical |Z| per look so that the first crossing at look k has null probability increments[k].

    Works on the score scale x = Z sqrt(t) (a Brownian motion with variance t): `density` is the
    sub-density of x at the current look over the paths that have not crossed yet, on a Simpson
    grid over the continuation region (-b, b). The next look's crossing probability for a
    boundary b' integrates the Gaussian increment's two tails against it; b' is found by root
    search, then the density is carried over to the new continuation region.
    """
    from scipy.optimize import brentq

    steps = np.diff(fractions, prepend=0.0)
    h = float(np.sqrt(steps.min())) / GRID_STEPS_PER_SD
    grid = np.zeros(1)
    mass = np.ones(1)  # density x Simpson weight at each grid point: a point mass at x = 0 before the first look
    critical: list[float] = []
    for t, step, spend in zip(fractions, steps, increments):
        sd = math.sqrt(step)
        reach = TAIL_SD * math.sqrt(t)
        arguments = (grid, mass, sd, spend)
        if spend <= 0.0 or _excess_crossing(reach, *arguments) >= 0.0:
            bound, critical_z = reach, math.inf  # nothing (representable) to spend at this look
        else:
            bound = brentq(_excess_crossing, 0.0, reach, args=arguments, xtol=1e-12, rtol=1e-12)
            critical_z = bound / math.sqrt(t)
        critical.append(critical_z)
        new_grid, weights = _simpson_grid(bound, h)
        density = np.exp(-0.5 * ((new_grid[:, None] - grid[None, :]) / sd) ** 2) @ mass / (sd * math.sqrt(2.0 * math.pi))
        grid, mass = new_grid, density * weights
    return critical


def _excess_crossing(bound: float, grid: np.ndarray, mass: np.ndarray, sd: float, spend: float) -> float:
    """Probability of first crossing +-bound at this look (increment sd `sd` from the surviving
    `mass` on `grid`), minus the alpha this look is to spend."""
    from scipy.special import ndtr

    return float(mass @ (ndtr((-bound - grid) / sd) + ndtr((grid - bound) / sd))) - spend


def _simpson_grid(bound: float, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Points and Simpson weights over [-bound, bound] with steps of at most h (an even number of them)."""
    intervals = max(2, 2 * math.ceil(bound / h))
    points = np.linspace(-bound, bound, intervals + 1)
    weights = np.ones(intervals + 1)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    return points, weights * (points[1] - points[0]) / 3.0
