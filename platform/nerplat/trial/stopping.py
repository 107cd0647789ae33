"""When a trial stops: at its dev plateau (`train.early_stopping`), or at the cap (`train.epochs`).

Patience counts dev evaluations, not epochs, each without an improvement of more than `min_delta` in
the selection metric over the best value so far (the first evaluation always improves on nothing), as
Keras' and Lightning's `EarlyStopping` count. The count is read from the
trial's evaluations each time, never kept beside them, so a trial restored from a checkpoint goes on
counting where it left off. Which weights are kept is `trial.session`'s: the best evaluation's, by any
rise of the metric; `min_delta` only decides when to stop looking for a better one.

A run that stopped by patience showed a plateau of `patience` evaluations after it had learned
something (risen above its first evaluation): its budget did not cut it short, which is what
`analysis.convergence` reads. A run that reached the cap did not show one, and neither did a run
that never rose above where it started (it runs to the cap: not converged).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from nerplat.config.trial import EarlyStopping

StoppedBy = Literal["patience", "cap"]


def evaluations_without_improvement(values: Sequence[float], min_delta: float) -> int:
    """Evaluations since the last one that rose more than `min_delta` above the best before it (NaN never
    rises), counted only once a run has risen above its first evaluation: until then it has learned
    nothing it did not start with (a constant predictor scores above 0 on untyped spans, and a slow
    learner may dip before it rises), so there is no plateau to stop on."""
    best, waited, learned = -math.inf, 0, False
    for index, value in enumerate(values):
        if value > best + min_delta:
            learned = learned or index > 0
            best, waited = value, 0
        elif learned:
            waited += 1
    return waited


def stopped_by(values: Sequence[float], rule: EarlyStopping | None, epoch: int, cap: int) -> StoppedBy | None:
    """Why the trial stops after the evaluation of `values[-1]` (at `epoch` of `cap`), or None when it goes on.

    Patience wins at the cap too: a plateau was shown there, whether or not more epochs were allowed.
    """
    if rule is not None and evaluations_without_improvement(values, rule.min_delta) >= rule.patience:
        return "patience"
    return "cap" if epoch >= cap else None
