"""Focal loss (Lin et al. 2017) as Nemoto et al. 2024 use it (eq. 5), in its softmax and one-vs-rest forms.

- ``softmax``: l = -(1 - p_y)^gamma log p_y with p the softmax over the K labels, as in ShannonAI's
  `FocalLoss` (no alpha weights). gamma = 0 is cross-entropy.
- ``one_vs_rest``: Nemoto et al. 2024 extend the binary focal loss one-vs-rest; here each label's logit is its own
  binary classifier, q_k = sigmoid(z_k), and the word's loss is the sum over labels of
  -[y_k (1 - q_k)^gamma log q_k + (1 - y_k) q_k^gamma log(1 - q_k)]. The paper does not say whether q_k
  is a sigmoid or the softmax probability; the sigmoid is the one-vs-rest form of the original focal
  loss (RetinaNet), and argmax decoding is unchanged since sigmoid is monotone.

gamma in [0, 10] as tuned in Nemoto et al. 2024 (TPE range).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from nerplat.objectives.base import ObjectiveConfig, ObjectiveContext
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.token_loss import TokenLoss, floored_power


class FocalConfig(ObjectiveConfig):
    gamma: float = Field(2.0, ge=0.0, le=10.0, description="Focusing exponent; 0 gives cross-entropy (softmax form).")
    form: Literal["softmax", "one_vs_rest"] = Field(
        "softmax", description="Softmax focal loss, or one sigmoid focal loss per label summed (Nemoto et al. 2024's extension)."
    )


class FocalLoss(TokenLoss):
    def word_losses(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        gamma = self.config.gamma
        if self.config.form == "softmax":
            log_p = F.log_softmax(scores, dim=-1).gather(1, labels[:, None]).squeeze(1)
            return -floored_power(-torch.expm1(log_p), gamma) * log_p
        target = F.one_hot(labels, scores.shape[-1]).to(scores.dtype)
        log_q, log_not_q = F.logsigmoid(scores), F.logsigmoid(-scores)
        positive = floored_power(log_not_q.exp(), gamma) * log_q
        negative = floored_power(log_q.exp(), gamma) * log_not_q
        return -(target * positive + (1.0 - target) * negative).sum(dim=-1)


@OBJECTIVES.register("focal", config=FocalConfig, examples=({"gamma": 2.0}, {"gamma": 2.0, "form": "one_vs_rest"}))
def build(config: FocalConfig, context: ObjectiveContext) -> FocalLoss:
    """Focal loss, softmax or one-vs-rest form (Lin et al. 2017; Nemoto et al. 2024, eq. 5)."""
    return FocalLoss(config)
