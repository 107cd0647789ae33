"""Binary focal loss (Lin et al. 2017) on the start, end and span-match tasks: Nemoto et al. 2024, Table 6's
"BERT-MRC w/ FL" with gamma = 3.0 (Nemoto et al. 2024, sec. IV-D, fixed, not tuned).

Per position with q = sigmoid(z):  l = -[y (1 - q)^gamma log q + (1 - y) q^gamma log(1 - q)],
averaged over the task's positions. No alpha weights (Nemoto et al. 2024 give none; ShannonAI's dice_loss_for_NLP
`FocalLoss` leaves them off by default). gamma = 0 is `mrc_bce`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field

from nerplat.objectives.base import ObjectiveContext
from nerplat.objectives.mrc_base import MRCObjectiveConfig, PositionwiseMRCObjective
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.token_loss import floored_power


class MRCFocalConfig(MRCObjectiveConfig):
    gamma: float = Field(
        3.0, ge=0.0, le=10.0, description="Focusing exponent; Nemoto et al. 2024's MRC runs fix 3.0; 0 gives BCE."
    )


class MRCFocalLoss(PositionwiseMRCObjective):
    def position_losses(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        gamma = self.config.gamma
        log_q, log_not_q = F.logsigmoid(logits), F.logsigmoid(-logits)
        positive = floored_power(log_not_q.exp(), gamma) * log_q
        negative = floored_power(log_q.exp(), gamma) * log_not_q
        return -(targets * positive + (1.0 - targets) * negative)


@OBJECTIVES.register("mrc_focal", config=MRCFocalConfig, examples=({"gamma": 3.0},))
def build(config: MRCFocalConfig, context: ObjectiveContext) -> MRCFocalLoss:
    """Binary focal loss on start, end and span-match (Nemoto et al. 2024, Table 6, gamma 3; mrc head)."""
    return MRCFocalLoss(config)
