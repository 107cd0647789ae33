"""Binary cross-entropy on the start, end and span-match tasks: the BERT-MRC baseline (Li et al.
2020; Nemoto et al. 2024, Table 6, 92.32 F1 on CoNLL-2003), as ShannonAI's `BCEWithLogitsLoss` averaged over the
scored positions of each task (`nerplat.objectives.mrc_base`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from nerplat.objectives.base import ObjectiveContext
from nerplat.objectives.mrc_base import MRCObjectiveConfig, PositionwiseMRCObjective
from nerplat.objectives.registry import OBJECTIVES


class MRCBCEConfig(MRCObjectiveConfig):
    """BCE takes only the task weights."""


class MRCBinaryCrossEntropy(PositionwiseMRCObjective):
    def position_losses(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(logits, targets, reduction="none")


@OBJECTIVES.register("mrc_bce", config=MRCBCEConfig)
def build(config: MRCBCEConfig, context: ObjectiveContext) -> MRCBinaryCrossEntropy:
    """Binary cross-entropy on start, end and span-match (BERT-MRC, Li et al. 2020; mrc head)."""
    return MRCBinaryCrossEntropy(config)
