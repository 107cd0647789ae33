"""AUC margin loss (AUCM) of one binary task: Yuan, Yan, Sonka & Yang 2021, "Large-scale robust deep
AUC maximization" (ICCV), the loss of Nguyen et al. 2023a, eq. 3 and 2023b, eq. 1.

With sigmoid score h in [0, 1], margin m, positive share p (imratio), primal a, b and dual alpha >= 0,
as a mean over the N labelled words of the batch (LibAUC `AUCMLoss`, version "v1"):

    (1-p) mean[(h - a)^2 1{y=1}] + p mean[(h - b)^2 1{y=0}]
    + 2 alpha (p (1-p) m + mean[p h 1{y=0} - (1-p) h 1{y=1}]) - p (1-p) alpha^2

Minimised over the network, a and b; maximised over alpha (`nerplat.optim.PESG` / `PDSCA` do the
projected ascent). At the optimum a and b are the mean positive and negative scores. Nguyen et al. 2023a and 2023b print
the prior-free form (eq. 3c / 1c; LibAUC's "v2"); their code was modified LibAUC of 2022, whose
`AUCMLoss` had only this prior-weighted form, which is also LibAUC's default, so we follow it by
default. `prior_free=True` gives the printed form, with class means over the batch's positive and
negative words (a class absent from the batch adds nothing):

    mean[(h - a)^2 | y=1] + mean[(h - b)^2 | y=0] + 2 alpha (m + mean[h | y=0] - mean[h | y=1]) - alpha^2

LibAUC 2.0.1's "v2" divides the negatives' score sum by the batch size instead of their count.

Deviations from LibAUC 2.0.1, on purpose: p is the task's positive share in the *training set*
(from `ObjectiveContext.label_counts`) and stays fixed; LibAUC's default `auto=True` silently
recomputes it from every mini-batch and ignores the given imratio. a, b, alpha are `nn.Parameter`s of
this module created on the module's device (LibAUC creates them on cuda whenever CUDA exists).
The value equals `AUCMLoss(margin, imratio=p)(h, y, auto=False)` (tested). The loss can be negative:
never use it as a scheduling metric.
"""

from __future__ import annotations

import torch
from torch import nn


class AUCMarginLoss(nn.Module):
    """AUCM of one binary task; `a`, `b` (descent) and `alpha` (ascent) are its parameters."""

    def __init__(self, margin: float, imratio: float, prior_free: bool = False):
        super().__init__()
        if not 0.0 <= imratio <= 1.0:
            raise ValueError(f"imratio must be in [0, 1], got {imratio}")
        self.margin = float(margin)
        self.imratio = float(imratio)
        self.prior_free = prior_free
        self.a = nn.Parameter(torch.zeros(1))
        self.b = nn.Parameter(torch.zeros(1))
        self.alpha = nn.Parameter(torch.zeros(1))

    def forward(self, scores: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
        """AUCM of sigmoid scores ``[N]`` in [0, 1] against boolean targets ``[N]``."""
        p, m = self.imratio, self.margin
        pos = positive.to(scores.dtype)
        neg = 1.0 - pos
        if self.prior_free:
            def mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
                return (values * mask).sum() / mask.sum().clamp(min=1.0)

            return (
                mean((scores - self.a) ** 2, pos)
                + mean((scores - self.b) ** 2, neg)
                + 2 * self.alpha * (m + mean(scores, neg) - mean(scores, pos))
                - self.alpha**2
            ).squeeze(0)
        return (
            (1 - p) * torch.mean((scores - self.a) ** 2 * pos)
            + p * torch.mean((scores - self.b) ** 2 * neg)
            + 2 * self.alpha * (p * (1 - p) * m + torch.mean(p * scores * neg - (1 - p) * scores * pos))
            - p * (1 - p) * self.alpha**2
        ).squeeze(0)

    def extra_repr(self) -> str:
        return f"margin={self.margin}, imratio={self.imratio:.4f}, prior_free={self.prior_free}"
