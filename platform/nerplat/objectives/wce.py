"""Weighted cross-entropy, WCE-1 and WCE-2 of Nemoto et al. 2024 (sec. IV-C-a, eq. 4).

l_WCE(y_i, p_i) = -w_y log p_i,y, averaged over labelled words, with class weights from the
training-set word counts s_k (s = sum_k s_k, K labels):

- ``inverse_frequency`` (WCE-1): w_k = s / (K s_k). Nemoto et al. 2024 say "inverse class frequency" without a
  scale; this one (sklearn's "balanced") makes the training-set average weight 1, so the loss stays on
  CE's scale and learning rates carry over.
- ``log_ratio`` (WCE-2, from the dice-loss paper): w_k = log10((s - s_k) / s_k + beta), beta in [1, 10].

Deviations: a label absent from the training sample (s_k = 0, common in 20-sentence partitions) is
counted as 1 so its weight is finite; no word carries it, so it changes nothing else. The batch loss is
the plain mean of the per-word l_WCE (Nemoto et al. 2024, eq. 3), not torch's `CrossEntropyLoss(weight=...)`, which
divides by the sum of the gold words' weights instead.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field, model_validator

from nerplat.objectives.base import ObjectiveConfig, ObjectiveContext
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.token_loss import TokenLoss


class WCEConfig(ObjectiveConfig):
    scheme: Literal["inverse_frequency", "log_ratio"] = Field(
        "inverse_frequency", description="WCE-1 (inverse_frequency) or WCE-2 (log_ratio) class weights."
    )
    beta: float | None = Field(
        None, ge=1.0, le=10.0, description="WCE-2's beta, required by log_ratio only; Nemoto et al. 2024 tune it in [1, 10]."
    )

    @model_validator(mode="after")
    def _beta_with_log_ratio_only(self) -> WCEConfig:
        if self.scheme == "log_ratio" and self.beta is None:
            raise ValueError("scheme 'log_ratio' needs beta in [1, 10]")
        if self.scheme == "inverse_frequency" and self.beta is not None:
            raise ValueError("beta applies to scheme 'log_ratio' only; remove it or set scheme: log_ratio")
        return self


def class_weights(counts: list[int], scheme: str, beta: float | None) -> torch.Tensor:
    """Class weights w_k from training word counts s_k (see module docstring)."""
    s_k = torch.tensor(counts, dtype=torch.float64).clamp(min=1.0)
    s = s_k.sum()
    if scheme == "inverse_frequency":
        weights = s / (len(counts) * s_k)
    else:
        weights = torch.log10((s - s_k) / s_k + beta)
    return weights.float()


class WeightedCrossEntropy(TokenLoss):
    def __init__(self, config: WCEConfig, weights: torch.Tensor):
        super().__init__(config)
        self.register_buffer("class_weights", weights)

    def word_losses(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.class_weights[labels] * F.cross_entropy(scores, labels, reduction="none")


@OBJECTIVES.register("wce", config=WCEConfig, examples=({"scheme": "log_ratio", "beta": 2.0},))
def build(config: WCEConfig, context: ObjectiveContext) -> WeightedCrossEntropy:
    """Weighted cross-entropy: WCE-1 inverse frequency or WCE-2 log ratio weights (Nemoto et al. 2024)."""
    return WeightedCrossEntropy(config, class_weights(context.label_counts, config.scheme, config.beta))
