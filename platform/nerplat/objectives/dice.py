"""Dice loss per word in two forms: Li et al.'s self-adjusting dice (Nemoto et al. 2024, eq. 6) and Wang & Wang 2022's plain dice.

Per word and label k, with p_k the softmax probability, y_k = 1 for the gold label and
p~_k = (1 - p_k)^eps p_k:

- ``self_adjusting`` (Li et al. 2020, "Dice Loss for Data-imbalanced NLP Tasks"; Nemoto et al. 2024, eq. 6):
  l_k = 1 - (2 p~_k y_k + delta) / (p~_k + y_k + delta), eps 1 unless given.
  eps = 1, delta = 0.01 are the values Nemoto et al. 2024 print for their MRC runs; the ShannonAI recipe Nemoto et al. 2024 say
  it follows has them the other way round (see `mrc_dice`). Per word, this form drives words to O
  under either reading (docs/results/README.md, mom_conll section).
- ``squared``: the denominator's terms squared, l_k = 1 - (2 p~_k y_k + delta) / (p~_k^2 + y_k^2 + delta),
  eps 0 unless given. With eps 0 it is Wang & Wang 2022's plain dice (App. B, eqs. 19-21): 1 - (g + 2 p_c)/(g +
  p_c^2 + 1) for the gold class c and 1 - g/(g + p_j^2) for the others, with g = delta; Wang & Wang 2022 use
  g = 1e-5 for their deep models (App. A.3; one text extraction of the paper prints "10", having lost the exponent).

The word's loss is the sum over labels, l = sum_k l_k, averaged over labelled words.

Which form of ShannonAI's code (dice_loss_for_NLP, loss/dice_loss.py): on one score per position
(`_binary_class`, MRC) its `DiceLoss` is a set-level dice over the batch (`mrc_dice`). On a score per
label (`_multiple_class`, a tagger) it scores each label's column as [N, 1] and sums over the last
axis, so with `square_denominator` it is exactly ``squared`` here, per word and label, summed over
labels and averaged over words (`alpha` = eps, `smooth` = delta); without it, each word's numerator
is divided by the whole batch's sums, which neither form here computes. The per-word loss is also
what MoM needs as a base (a loss per gold-O word). Nemoto et al. 2024 print the self-adjusting denominator as
(1 - p)^eps + y + delta, dropping the factor p; we follow Li et al. The published dice NER numbers
are MRC-NER, not BIO tagging.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from nerplat.objectives.base import ObjectiveConfig, ObjectiveContext
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.token_loss import TokenLoss, floored_power


class DiceConfig(ObjectiveConfig):
    form: Literal["self_adjusting", "squared"] = Field(
        "self_adjusting",
        description="self_adjusting: Li et al.'s (1-p)^eps p with a linear denominator (Nemoto et al. 2024); "
        "squared: squared denominator terms, 1 - (2p~y + delta)/(p~^2 + y^2 + delta): Wang & Wang 2022's plain dice "
        "at eps 0 (use delta 1e-5), ShannonAI's multi-class DiceLoss with square_denominator at eps = alpha.",
    )
    eps: float | None = Field(
        None, ge=0.0, le=10.0, description="Exponent on (1 - p) (Li et al.'s alpha); default 1 for self_adjusting, 0 for squared."
    )
    delta: float = Field(
        0.01, gt=0.0, le=10.0, description="Smoothing added to numerator and denominator (Wang & Wang 2022's gamma)."
    )

    @property
    def exponent(self) -> float:
        """eps, or its form's default: 1 (Li et al.'s self-adjusting dice), 0 (Wang & Wang 2022's plain dice)."""
        if self.eps is not None:
            return self.eps
        return 1.0 if self.form == "self_adjusting" else 0.0


class DiceLoss(TokenLoss):
    def word_losses(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        p = F.softmax(scores, dim=-1)
        y = F.one_hot(labels, scores.shape[-1]).to(p.dtype)
        delta = self.config.delta
        exponent = self.config.exponent
        adjusted = floored_power(1.0 - p, exponent) * p if exponent else p  # Wang & Wang 2022's plain dice needs no (1 - p)^0
        # y is one-hot, so y^2 = y
        scored = adjusted * adjusted if self.config.form == "squared" else adjusted
        per_label = 1.0 - (2.0 * adjusted * y + delta) / (scored + y + delta)
        return per_label.sum(dim=-1)


@OBJECTIVES.register("dice", config=DiceConfig, examples=({}, {"form": "squared", "delta": 1e-5}))
def build(config: DiceConfig, context: ObjectiveContext) -> DiceLoss:
    """Dice per word: self-adjusting (Li et al. 2020; Nemoto et al. 2024, eq. 6) or squared
    (Wang & Wang 2022, App. B eqs. 19-21)."""
    return DiceLoss(config)
