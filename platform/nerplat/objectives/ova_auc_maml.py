"""OVA-AUC-MAML of Nguyen et al. 2023b (Algorithm 2): per optimiser step, the sum of the AUCM of m sampled label heads.

Nguyen et al. 2023b call this a first-order MAML approximation; Algorithm 2 itself is: sample m of the K labels,
sum their AUC margin losses (eq. 1), take one optimiser step. That is what this objective does, one
step per batch (Algorithm 2's loop is written per epoch; the text says per iteration). Optimiser:
PESG, recipe in `PrimalDualSettings`. Nguyen et al. 2023b give no value of m; the default 3 is ours.

Sampling is deterministic: the labels of training step t are the first m of a permutation drawn from
a generator seeded by (trial seed, t). The step counter is a buffer of this module, so a resumed run
continues the same sequence and every worker of a multi-worker run draws the same labels (their
gradients then refer to the same heads). In eval mode (a dev loss) all K labels count.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from pydantic import Field

from nerplat.errors import Problem, UserInputError
from nerplat.models.heads.base import HeadOutput
from nerplat.objectives.base import Objective, ObjectiveContext, PrimalDualSettings
from nerplat.objectives.one_vs_all import LabelAUCMargins
from nerplat.objectives.registry import OBJECTIVES


class OVAAUCMAMLConfig(PrimalDualSettings):
    heads: ClassVar[tuple[str, ...]] = ("ova",)
    default_head: ClassVar[str] = "ova"

    m: int = Field(3, ge=1, description="Label heads sampled per optimiser step (at most the number of labels).")
    margin: float = Field(1.0, gt=0.0, le=10.0, description="AUC margin m of every label head.")


class SampledOneVsAllAUC(Objective):
    def __init__(self, config: OVAAUCMAMLConfig, context: ObjectiveContext):
        super().__init__(config)
        if config.m > context.num_labels:
            raise UserInputError(
                Problem(f"ova_auc_maml samples m={config.m} labels but the corpus has {context.num_labels}", path="m")
            )
        self.seed = context.seed
        self.margins = LabelAUCMargins(context, config.margin)
        self.register_buffer("steps_taken", torch.zeros((), dtype=torch.long))

    def sampled_labels(self, step: int) -> list[int]:
        """The m label ids of training step ``step`` (a pure function of seed and step)."""
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        return torch.randperm(len(self.margins.per_label), generator=generator)[: self.config.m].tolist()

    def forward(self, output: HeadOutput, labels: torch.Tensor, substep: int = 0) -> torch.Tensor:
        self.check_substep(substep)
        if not self.training:
            return self.margins(output, labels, range(len(self.margins.per_label)))
        chosen = self.sampled_labels(int(self.steps_taken))
        self.steps_taken += 1
        return self.margins(output, labels, sorted(chosen))


@OBJECTIVES.register("ova_auc_maml", config=OVAAUCMAMLConfig, examples=({"m": 5},))
def build(config: OVAAUCMAMLConfig, context: ObjectiveContext) -> SampledOneVsAllAUC:
    """AUCM summed over m label heads sampled per step, PESG (Nguyen et al. 2023b's OVA-AUC-MAML, Alg. 2)."""
    return SampledOneVsAllAUC(config, context)
