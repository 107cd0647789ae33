"""MoM learning (Nemoto et al. 2024, eq. 1-3) carried over to the MRC framework (Nemoto et al. 2024, Table 6, "BERT-MRC w/ MoM").

In MRC every task is binary and its majority class is the negative one: "not a start", "not an
end", "not a matching span". The carry-over, per task t in (start, end, match) with weight w_t:

    L_MoM     = sum_t w_t * (sum over gold-negative positions of t of l) / (M_t * R)
    L         = lambda * L_base + (1 - lambda) * L_MoM

- l and L_base are the base loss (`mrc_bce`, the paper's BERT-MRC baseline, or `mrc_focal`) per
  position and as usually computed (mean over each task's positions, weighted); lambda = 1 gives
  exactly the base loss.
- The normaliser follows Nemoto et al. 2024's M, the number of positions of a padded input (max_length): M_t = M
  for start and end (one prediction per position), M (M + 1) / 2 for match (one per pair i <= j of
  the padded input); R is the number of (window, query) examples in the batch, Nemoto et al. 2024's sentences.
- lambda is tuned by TPE in [0, 1] as in Nemoto et al. 2024 (Table 2: 0.446 for BERT-MRC on CoNLL-2003).
- Dice cannot be a base here: ShannonAI's MRC dice is set-level, with no loss per position to sum
  over the majority positions.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from pydantic import Field, field_validator

from nerplat.models.heads.mrc import MRCOutput
from nerplat.objectives.base import Objective, ObjectiveContext
from nerplat.objectives.mom import BaseLoss, MoMConfig
from nerplat.objectives.mrc_base import PositionwiseMRCObjective, mrc_tasks
from nerplat.objectives.registry import OBJECTIVES


class MRCBaseLoss(BaseLoss):
    name: Literal["mrc_bce", "mrc_focal"] = Field(description="Registered MRC loss with a loss per position.")

    @field_validator("name")
    @classmethod
    def _a_per_word_loss(cls, name: str) -> str:
        return name  # the Literal lists the MRC losses that have a loss per position


class MRCMoMConfig(MoMConfig):
    heads: ClassVar[tuple[str, ...]] = ("mrc",)
    default_head: ClassVar[str] = "mrc"

    lambda_: float = Field(
        0.446,
        alias="lambda",
        ge=0.0,
        le=1.0,
        description="Weight of the base loss; 1 - lambda weighs the majority (negative) term. Nemoto et al. 2024 tune it "
        "by TPE in [0, 1] (0.446 for BERT-MRC on CoNLL-2003).",
    )
    base: MRCBaseLoss = Field(
        MRCBaseLoss.model_construct(name="mrc_bce", params={}),
        description="Base loss: mrc_bce or mrc_focal, as a name or {name, params}.",
    )


class MRCMoMLoss(Objective):
    def __init__(self, config: MRCMoMConfig, base: PositionwiseMRCObjective, max_length: int):
        super().__init__(config)
        self.base = base
        self.padded_positions = {"start": max_length, "end": max_length, "match": max_length * (max_length + 1) // 2}

    def forward(self, output: MRCOutput, labels: torch.Tensor, substep: int = 0) -> torch.Tensor:
        self.check_substep(substep)
        lam = self.config.lambda_
        usual = self.base(output, labels)
        examples = labels.shape[0]
        weights = self.base.config.task_weights()
        majority = usual * 0.0
        for task, (logits, targets) in mrc_tasks(output, labels).items():
            negative = targets == 0
            losses = self.base.position_losses(logits[negative], targets[negative])
            majority = majority + weights[task] * losses.sum() / (self.padded_positions[task] * examples)
        return lam * usual + (1.0 - lam) * majority


@OBJECTIVES.register(
    "mrc_mom",
    config=MRCMoMConfig,
    examples=({"lambda": 0.4}, {"lambda": 0.4, "base": {"name": "mrc_focal", "params": {"gamma": 2.0}}}),
)
def build(config: MRCMoMConfig, context: ObjectiveContext) -> MRCMoMLoss:
    """MoM over an MRC base loss: the negative (majority) positions of start, end and match (Nemoto et al. 2024, Table 6)."""
    base = OBJECTIVES.build(config.base.name, config.base.params, at="objective.base.params", context=context)
    return MRCMoMLoss(config, base, context.max_length)
