"""A pooled estimate over runs of one claim: random effects by DerSimonian & Laird (1986).

Each report (run) of a claim gives an estimate (its mean unit-level difference) and its standard
error. The runs differ in more than their units (seeds, partitions, caps, the code of their day), so
the pooled estimate allows a between-run variance tau^2, estimated by the method of moments:

  w_i = 1 / se_i^2,  Q = sum w_i (y_i - y_w)^2,  tau^2 = max(0, (Q - (k - 1)) / (sum w - sum w^2 / sum w))
  w*_i = 1 / (se_i^2 + tau^2),  pooled = sum w*_i y_i / sum w*_i,  se = 1 / sqrt(sum w*_i)

with a normal interval (DerSimonian, R. & Laird, N. 1986, "Meta-analysis in clinical trials",
Controlled Clinical Trials 7: 177-188). It is a reading beside a verdict, never one: which runs were
made, and when they stopped, depended on results already seen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Pooled:
    """The pooled estimate, its standard error and interval at `level`, tau^2 and the runs pooled."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    tau2: float
    runs: int
    level: float


def dersimonian_laird(estimates: Sequence[float], ses: Sequence[float], level: float = 0.95) -> Pooled | None:
    """The random-effects pooled estimate of runs with `estimates` and standard errors `ses`; None
    without a run that has a finite, positive standard error (one such run pools to itself)."""
    from scipy.stats import norm

    y, se = np.asarray(estimates, dtype=float), np.asarray(ses, dtype=float)
    keep = np.isfinite(y) & np.isfinite(se) & (se > 0)
    y, se = y[keep], se[keep]
    if y.size == 0:
        return None
    w = 1.0 / se**2
    fixed = float(w @ y / w.sum())
    q = float(w @ (y - fixed) ** 2)
    scale = float(w.sum() - (w**2).sum() / w.sum())
    tau2 = max(0.0, (q - (y.size - 1)) / scale) if scale > 0 else 0.0
    weights = 1.0 / (se**2 + tau2)
    estimate = float(weights @ y / weights.sum())
    pooled_se = 1.0 / math.sqrt(float(weights.sum()))
    z = float(norm.isf((1.0 - level) / 2.0))
    return Pooled(estimate, pooled_se, estimate - z * pooled_se, estimate + z * pooled_se, tau2, int(y.size), level)
