"""Self-adjusting dice loss on the start, end and span-match tasks, in the form ShannonAI use for MRC
(Li et al. 2020b, "Dice Loss for Data-imbalanced NLP Tasks"; dice_loss_for_NLP loss/dice_loss.py,
`DiceLoss._binary_class`, no OHEM): Nemoto et al. 2024, Table 6's "BERT-MRC w/ DL".

Per task, over its scored positions of the whole batch (a set-level dice, not a per-position one):

    p~ = (1 - p)^eps p,   p = sigmoid(z);     L = 1 - (2 sum p~ y + delta) / (sum p~ + sum y + delta)

and with `square` (ShannonAI's `--dice_square`) the denominator sum p~^2 + sum y^2 + delta. eps is
ShannonAI's `alpha`, delta their `smooth`. Their CoNLL-03 MRC recipe (scripts/ner_enconll03/
bert_dice.sh) sets smooth 1, alpha 0.01 and the squared denominator, so Nemoto et al. 2024's "eps 1.0, delta 0.01"
names the smoothing first: here `eps: 0.01, delta: 1.0, square: true`. This differs from `dice`
(sequence labelling), which evaluates the ratio per word and label: for MRC the published numbers
use the set form. Being set-level, it has no loss per position, so MoM cannot take it as base
(`mrc_mom`). The positions are those every MRC loss scores (`mrc.mrc_tasks`); ShannonAI's trainer
passes no mask to the start and end dice, so query and padding positions count there as negatives.
"""

from __future__ import annotations

import torch
from pydantic import Field

from nerplat.objectives.base import ObjectiveContext
from nerplat.objectives.mrc_base import MRCObjective, MRCObjectiveConfig
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.token_loss import floored_power


class MRCDiceConfig(MRCObjectiveConfig):
    eps: float = Field(1.0, ge=0.0, le=10.0, description="Self-adjusting exponent on (1 - p) (ShannonAI alpha).")
    delta: float = Field(0.01, gt=0.0, le=10.0, description="Smoothing of numerator and denominator (ShannonAI smooth).")
    square: bool = Field(
        False, description="Squared terms in the denominator (ShannonAI --dice_square, their CoNLL-03 MRC recipe)."
    )


class MRCDiceLoss(MRCObjective):
    def task_loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        p = torch.sigmoid(logits)
        adjusted = floored_power(1.0 - p, self.config.eps) * p
        delta = self.config.delta
        scores = adjusted.square() if self.config.square else adjusted
        # targets are 0 or 1, so their squares are themselves
        return 1.0 - (2.0 * (adjusted * targets).sum() + delta) / (scores.sum() + targets.sum() + delta)


@OBJECTIVES.register("mrc_dice", config=MRCDiceConfig, examples=({"eps": 1.0, "delta": 0.01},))
def build(config: MRCDiceConfig, context: ObjectiveContext) -> MRCDiceLoss:
    """Set-level self-adjusting dice on start, end and span-match (ShannonAI's MRC form; mrc head)."""
    return MRCDiceLoss(config)
