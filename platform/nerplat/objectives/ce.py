"""Cross-entropy on the softmax head: the baseline of every paper (Nguyen et al. 2023a, Table 2, Nemoto et al. 2024, Table 3).

L = -(1/N) sum_i log p_i,y_i over the N labelled words of the batch (first sub-token of each word).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from nerplat.objectives.base import ObjectiveConfig, ObjectiveContext
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.token_loss import TokenLoss


class CEConfig(ObjectiveConfig):
    """Cross-entropy takes no parameters."""


class CrossEntropy(TokenLoss):
    def word_losses(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(scores, labels, reduction="none")


@OBJECTIVES.register("ce", config=CEConfig)
def build(config: CEConfig, context: ObjectiveContext) -> CrossEntropy:
    """Cross-entropy over labelled words (softmax head)."""
    return CrossEntropy(config)
