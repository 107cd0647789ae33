"""COMAUC-2T of Nguyen et al. 2023a: compositional training (Yuan, Guo, Chawla & Yang 2022, ICLR) of AUC-2T, with PDSCA.

Compositional AUC minimises L_AUC(w - eta0 grad L_CE(w)): an inner cross-entropy step, then the AUC
loss at the point it reached. Per batch this objective has ``k + 1`` substeps, each with a fresh
forward pass and one optimiser step: substeps 0..k-1 are the CE step (CE-2T: BCE on the en and be
heads), substep k is AUC-2T (AUCM(en) + lambda AUCM(be), as `auc_2t`). `nerplat.optim.PDSCA` tells
the two apart as LibAUC does (an alpha received a gradient: AUC step) and applies the inner update
(step ``inner_lr_scale * lr`` then weight averaging) or the outer one (momentum, projected ascent).

Deviations:
- Nguyen et al. 2023a say it alternates "the standard multi-class cross entropy" with AUC-2T; a two-task head has
  no multi-class softmax, so the CE step is BCE on both heads. LibAUC's `CompositionalAUCLoss` does the
  same (binary cross-entropy on the scores the AUC loss uses).
- LibAUC alternates across successive batches by a call counter (code: k CE batches then k AUC
  batches; its docstring: k CE steps then one AUC step). We follow the docstring and the paper's
  algorithm: k inner steps then one outer step, on the same batch, keyed by the substep index rather
  than a hidden counter, so resuming and multi-worker training see the same schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import torch
from pydantic import Field

from nerplat.objectives.auc_2t import AUC2TConfig, TwoTaskAUCMargin
from nerplat.objectives.base import ObjectiveContext, OptimizerName
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.two_task import two_task_bce


class ComAUC2TConfig(AUC2TConfig):
    optimizer: ClassVar[OptimizerName] = "pdsca"

    k: int = Field(1, ge=1, le=10, description="Cross-entropy (inner) substeps before each AUC substep (LibAUC's k).")
    inner_lr_scale: float = Field(
        1.0, gt=0.0, le=100.0, description="Inner (CE) step size as a multiple of the group's lr (LibAUC lr0 / lr)."
    )
    weight_average: float = Field(
        0.99,
        ge=0.0,
        le=1.0,
        description="PDSCA beta1: weight of the new iterate after an inner step (0: no averaging).",
    )
    momentum: float = Field(
        0.999, ge=0.0, le=1.0, description="PDSCA beta2: weight of the new gradient in the AUC step's buffer."
    )

    def substeps(self, labels: Sequence[str]) -> int:
        """k CE-2T substeps, then the AUC substep."""
        return self.k + 1


class CompositionalTwoTaskAUC(TwoTaskAUCMargin):
    """AUC-2T's targets and AUC state, with k BCE substeps before each AUC substep."""

    def __init__(self, config: ComAUC2TConfig, context: ObjectiveContext):
        super().__init__(config, context)
        self.num_substeps = config.substeps(context.labels)

    def substep_loss(self, substep: int, logits: torch.Tensor, entity: torch.Tensor, begin: torch.Tensor) -> torch.Tensor:
        if substep < self.config.k:
            return two_task_bce(logits, entity, begin)
        return self.auc(logits, entity, begin)


@OBJECTIVES.register("comauc_2t", config=ComAUC2TConfig, examples=({"k": 1},))
def build(config: ComAUC2TConfig, context: ObjectiveContext) -> CompositionalTwoTaskAUC:
    """k CE-2T substeps then one AUC-2T substep per batch, PDSCA (Nguyen et al. 2023a's COMAUC-2T)."""
    return CompositionalTwoTaskAUC(config, context)
