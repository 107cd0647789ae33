"""Cross-entropy with label smoothing (Szegedy et al. 2016, sec. 7): the gold label gets 1 - eps,
every label eps / K. A `TokenLoss`, so it runs on the softmax head and can be MoM's base."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field

from nerplat.objectives import OBJECTIVES
from nerplat.objectives.base import ObjectiveConfig, ObjectiveContext
from nerplat.objectives.token_loss import TokenLoss


class SmoothedCEConfig(ObjectiveConfig):
    smoothing: float = Field(0.1, ge=0.0, lt=1.0, description="Probability mass spread evenly over all labels.")


class SmoothedCrossEntropy(TokenLoss):
    def word_losses(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(scores, labels, reduction="none", label_smoothing=self.config.smoothing)


@OBJECTIVES.register("smoothed_ce", config=SmoothedCEConfig)
def build(config: SmoothedCEConfig, context: ObjectiveContext) -> SmoothedCrossEntropy:
    """Cross-entropy with label smoothing (example plugin)."""
    return SmoothedCrossEntropy(config)
