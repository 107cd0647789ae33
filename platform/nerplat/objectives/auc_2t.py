"""AUC-2T of Nguyen et al. 2023a (eq. 3-4): AUCM(w_en) + lambda * AUCM(w_be) on the two-task head, trained with PESG.

Each task has its own AUC margin loss (`aucm.AUCMarginLoss`: margin m, a, b, alpha, imratio = that
task's positive share in the training set); lambda = 100 is Nguyen et al. 2023a's ablation optimum (Fig. 3; flat
optimum, tunable here). The optimiser is PESG (Yuan et al. 2021): descent on the network, a and b,
projected ascent on each alpha.

Recipe (see `PrimalDualSettings`): Nguyen et al. 2023a trained with LibAUC's PESG. With MiniLM, one PESG
learning rate and update for the whole model collapsed: good ranking, almost no entity at the 0.5
threshold (docs/performance.md, "Figures behind the code's choices"). The default therefore keeps the pretrained
encoder on AdamW at `train.lr` and runs PESG's SGD on heads and a, b at `train.head_lr` (0.1 unless
set). Decision threshold selection on dev belongs to the two-task head's decoder, not to this loss.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from pydantic import Field

from nerplat.models.heads.base import HeadOutput
from nerplat.objectives.base import Objective, ObjectiveContext, PrimalDualSettings, zero_loss
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.two_task import TwoTaskAUC, TwoTaskTargets, two_task_words


class AUC2TConfig(PrimalDualSettings):
    heads: ClassVar[tuple[str, ...]] = ("two_task",)
    default_head: ClassVar[str] = "two_task"

    lambda_: float = Field(
        100.0, alias="lambda", ge=0.0, description="Weight of the begin task's AUCM (Nguyen et al. 2023a: 100)."
    )
    margin: float = Field(1.0, gt=0.0, le=10.0, description="AUC margin m of both tasks.")
    prior_free: bool = Field(
        False, description="The form Nguyen et al. 2023a print (eq. 3c: class means, no prior p) instead of "
        "the prior-weighted form of the LibAUC they ran (`objectives.aucm`)."
    )


class TwoTaskAUCMargin(Objective):
    def __init__(self, config: AUC2TConfig, context: ObjectiveContext):
        super().__init__(config)
        self.targets = TwoTaskTargets(context.labels)
        self.auc = TwoTaskAUC(context, config.margin, config.lambda_, config.prior_free)

    def forward(self, output: HeadOutput, labels: torch.Tensor, substep: int = 0) -> torch.Tensor:
        self.check_substep(substep)
        logits, entity, begin = two_task_words(output, labels, self.targets)
        if entity.numel() == 0:
            return zero_loss(output)
        return self.substep_loss(substep, logits, entity, begin)

    def substep_loss(self, substep: int, logits: torch.Tensor, entity: torch.Tensor, begin: torch.Tensor) -> torch.Tensor:
        return self.auc(logits, entity, begin)


@OBJECTIVES.register("auc_2t", config=AUC2TConfig)
def build(config: AUC2TConfig, context: ObjectiveContext) -> TwoTaskAUCMargin:
    """AUCM(entity) + lambda * AUCM(begin) on the two-task head, PESG (Nguyen et al. 2023a's AUC-2T)."""
    return TwoTaskAUCMargin(config, context)
