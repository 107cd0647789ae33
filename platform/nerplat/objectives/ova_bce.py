"""OVA-BCE of Nguyen et al. 2023b: binary cross-entropy on each label's head of the one-vs-all model.

Per word, L = sum_k BCE(sigma(z_k), y_k) with y_k = 1 iff the gold label is k; averaged over labelled
words. Nguyen et al. 2023b give no reduction; summing over the K heads mirrors OVA-AUC's sum of per-label losses
(Nguyen et al. 2023b, Alg. 1), so the two differ only in the binary loss.
"""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F

from nerplat.objectives.base import ObjectiveConfig, ObjectiveContext
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.token_loss import TokenLoss


class OVABCEConfig(ObjectiveConfig):
    """OVA-BCE takes no parameters."""

    heads: ClassVar[tuple[str, ...]] = ("ova",)
    default_head: ClassVar[str] = "ova"


class OneVsAllBCE(TokenLoss):
    def word_losses(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        target = F.one_hot(labels, scores.shape[-1]).to(scores.dtype)
        return F.binary_cross_entropy_with_logits(scores, target, reduction="none").sum(dim=-1)


@OBJECTIVES.register("ova_bce", config=OVABCEConfig)
def build(config: OVABCEConfig, context: ObjectiveContext) -> OneVsAllBCE:
    """Binary cross-entropy on every label head of the one-vs-all model (Nguyen et al. 2023b's OVA-BCE)."""
    return OneVsAllBCE(config)
