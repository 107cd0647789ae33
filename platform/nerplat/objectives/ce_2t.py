"""CE-2T, the two-task baseline of Nguyen et al. 2023a: binary cross-entropy on both heads of the two-task model.

L = BCE(sigma(z_en), y_en) + BCE(sigma(z_be), y_be), each a mean over labelled words, with y_en = tag != O
and y_be = tag starts with B (Nguyen et al. 2023a, Fig. 1). Nguyen et al. 2023a give no weighting between the two BCE terms; they
are summed with weight 1.
"""

from __future__ import annotations

from typing import ClassVar

import torch

from nerplat.models.heads.base import HeadOutput
from nerplat.objectives.base import Objective, ObjectiveConfig, ObjectiveContext, zero_loss
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.two_task import TwoTaskTargets, two_task_bce, two_task_words


class CE2TConfig(ObjectiveConfig):
    """CE-2T takes no parameters."""

    heads: ClassVar[tuple[str, ...]] = ("two_task",)
    default_head: ClassVar[str] = "two_task"


class TwoTaskCrossEntropy(Objective):
    def __init__(self, config: CE2TConfig, context: ObjectiveContext):
        super().__init__(config)
        self.targets = TwoTaskTargets(context.labels)

    def forward(self, output: HeadOutput, labels: torch.Tensor, substep: int = 0) -> torch.Tensor:
        self.check_substep(substep)
        logits, entity, begin = two_task_words(output, labels, self.targets)
        if entity.numel() == 0:
            return zero_loss(output)
        return two_task_bce(logits, entity, begin)


@OBJECTIVES.register("ce_2t", config=CE2TConfig)
def build(config: CE2TConfig, context: ObjectiveContext) -> TwoTaskCrossEntropy:
    """Binary cross-entropy on the entity and begin heads (Nguyen et al. 2023a's CE-2T)."""
    return TwoTaskCrossEntropy(config, context)
