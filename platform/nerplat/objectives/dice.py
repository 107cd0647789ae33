"""Self-adjusting dice loss (Li et al. 2020, "Dice Loss for Data-imbalanced NLP Tasks"), as 004 eq. 6.

Per word and label k, with p_k the softmax probability and p~_k = (1 - p_k)^eps p_k:

    l_k = 1 - (2 p~_k y_k + delta) / (p~_k + y_k + delta),    l = sum_k l_k

averaged over labelled words. eps = 1, delta = 0.01 are 004's MRC settings (from Li et al.).

Which form: ShannonAI's `DiceLoss` computes a *set-level* dice over the whole batch per label,
1 - (2 sum p~y + smooth) / (sum p~ + sum y + smooth), and `square_denominator=True` squares the
denominator's terms (a different loss). This module implements the *per-word* form of the paper
(Li et al. sec. 3.4, 004 eq. 6) with the linear denominator, i.e. the non-squared variant evaluated
per word, summed one-vs-rest over labels like ShannonAI's multi-class loop. The per-word form is what
MoM needs (a loss per gold-O word). 004 prints the denominator as (1 - p)^eps + y + delta, dropping
the factor p; we follow Li et al. Note the published dice NER numbers are MRC-NER, not BIO tagging.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field

from nerplat.objectives.base import ObjectiveConfig, ObjectiveContext
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.token_loss import TokenLoss, floored_power


class DiceConfig(ObjectiveConfig):
    eps: float = Field(1.0, ge=0.0, le=10.0, description="Self-adjusting exponent on (1 - p) (Li et al.'s alpha).")
    delta: float = Field(0.01, gt=0.0, le=10.0, description="Smoothing added to numerator and denominator.")


class DiceLoss(TokenLoss):
    def word_losses(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        p = F.softmax(scores, dim=-1)
        y = F.one_hot(labels, scores.shape[-1]).to(p.dtype)
        p_adjusted = floored_power(1.0 - p, self.config.eps) * p
        delta = self.config.delta
        per_label = 1.0 - (2.0 * p_adjusted * y + delta) / (p_adjusted + y + delta)
        return per_label.sum(dim=-1)


@OBJECTIVES.register("dice", config=DiceConfig)
def build(config: DiceConfig, context: ObjectiveContext) -> DiceLoss:
    """Self-adjusting dice loss, per-word form (Li et al. 2020; 004 eq. 6)."""
    return DiceLoss(config)
