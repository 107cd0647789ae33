"""Dice loss per word, in two forms: Li et al.'s self-adjusting dice (004 eq. 6) and 002's plain dice.

Per word and label k, with p_k the softmax probability and y_k = 1 for the gold label:

- ``self_adjusting`` (Li et al. 2020, "Dice Loss for Data-imbalanced NLP Tasks"; 004 eq. 6), with
  p~_k = (1 - p_k)^eps p_k:  l_k = 1 - (2 p~_k y_k + delta) / (p~_k + y_k + delta).
  eps = 1, delta = 0.01 are the values 004 prints for its MRC runs; the ShannonAI recipe 004 says
  it follows has them the other way round (see `mrc_dice`). Per word, this form drives words to O
  under either reading (docs/results/README.md, mom_conll section).
- ``squared`` (002 App. B, eqs. 19-21): plain dice with a squared denominator,
  l_k = 1 - (2 p_k y_k + delta) / (p_k^2 + y_k^2 + delta), i.e. 1 - (g + 2 p_c)/(g + p_c^2 + 1) for
  the gold class c and 1 - g/(g + p_j^2) for the others, with g = delta. 002 uses g = 1e-5 for its
  deep models (App. A.3; the 003 extraction prints "10", having lost the exponent). No (1 - p)^eps.

The word's loss is the sum over labels, l = sum_k l_k, averaged over labelled words.

Which form of ShannonAI's code: its `DiceLoss` computes a *set-level* dice over the whole batch per
label, and `square_denominator=True` squares the denominator's terms (a different loss). Both forms
here are *per word*, summed one-vs-rest over labels like ShannonAI's multi-class loop: the per-word
form is what MoM needs (a loss per gold-O word). 004 prints the self-adjusting denominator as
(1 - p)^eps + y + delta, dropping the factor p; we follow Li et al. The published dice NER numbers
are MRC-NER, not BIO tagging.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field, model_validator

from nerplat.objectives.base import ObjectiveConfig, ObjectiveContext
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.token_loss import TokenLoss, floored_power


class DiceConfig(ObjectiveConfig):
    form: Literal["self_adjusting", "squared"] = Field(
        "self_adjusting",
        description="self_adjusting: Li et al.'s (1-p)^eps p with a linear denominator (004); "
        "squared: 002's plain dice, 1 - (2py + delta)/(p^2 + y^2 + delta) (use delta 1e-5).",
    )
    eps: float | None = Field(
        None, ge=0.0, le=10.0, description="Exponent on (1 - p) (Li et al.'s alpha) of the self_adjusting form; default 1 there."
    )
    delta: float = Field(0.01, gt=0.0, le=10.0, description="Smoothing added to numerator and denominator (002's gamma).")

    @model_validator(mode="after")
    def _eps_only_when_self_adjusting(self) -> "DiceConfig":
        if self.form == "squared" and self.eps is not None:
            raise ValueError("eps applies to form self_adjusting only; the squared form (002) has no (1 - p)^eps factor")
        return self

    @property
    def exponent(self) -> float:
        """eps of the self-adjusting form (1 unless given)."""
        return 1.0 if self.eps is None else self.eps


class DiceLoss(TokenLoss):
    def word_losses(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        p = F.softmax(scores, dim=-1)
        y = F.one_hot(labels, scores.shape[-1]).to(p.dtype)
        delta = self.config.delta
        if self.config.form == "squared":
            per_label = 1.0 - (2.0 * p * y + delta) / (p * p + y + delta)  # y^2 = y for one-hot y
        else:
            p_adjusted = floored_power(1.0 - p, self.config.exponent) * p
            per_label = 1.0 - (2.0 * p_adjusted * y + delta) / (p_adjusted + y + delta)
        return per_label.sum(dim=-1)


@OBJECTIVES.register("dice", config=DiceConfig)
def build(config: DiceConfig, context: ObjectiveContext) -> DiceLoss:
    """Dice per word: self-adjusting (Li et al. 2020; 004 eq. 6) or squared (002 App. B eqs. 19-21)."""
    return DiceLoss(config)
