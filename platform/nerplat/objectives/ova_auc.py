"""OVA-AUC of Nguyen et al. 2023b (eq. 1, Algorithm 1): AUCM per label head, optimised in grouped B / I / O steps.

Per batch, for prefix in (B, I, O): the loss is the sum of the AUCM of every label starting with that
prefix (B-PER, B-LOC, ... ; then the I- labels; then O), and the optimiser takes one step on it. So a
batch has three substeps, each with a fresh forward pass (the encoder moved in the previous one).
Labels are grouped by the prefix of their name, which for the corpus label list (O, B-/I- per type;
untyped: O, B-ENT, I-ENT) gives exactly Nguyen et al. 2023b's groups. Optimiser: PESG, recipe in `PrimalDualSettings`.

Deviation: Algorithm 1 writes the group loop per epoch; the text (and any working training loop) does
it per mini-batch, which is what we do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import torch
from pydantic import Field

from nerplat.models.heads.base import HeadOutput
from nerplat.objectives.base import Objective, ObjectiveContext, PrimalDualSettings, bio_prefix
from nerplat.objectives.one_vs_all import LabelAUCMargins
from nerplat.objectives.registry import OBJECTIVES

PREFIX_ORDER = ("B", "I", "O")


class OVAAUCConfig(PrimalDualSettings):
    heads: ClassVar[tuple[str, ...]] = ("ova",)
    default_head: ClassVar[str] = "ova"

    margin: float = Field(1.0, gt=0.0, le=10.0, description="AUC margin m of every label head.")

    def substeps(self, labels: Sequence[str]) -> int:
        """One step per B / I / O label group."""
        return len(prefix_groups(labels))


def prefix_groups(labels: Sequence[str]) -> list[list[int]]:
    """Label ids grouped by prefix, in Nguyen et al. 2023b's order B, I, O; empty groups are dropped."""
    prefixes = [bio_prefix(label) for label in labels]
    groups = [[k for k, p in enumerate(prefixes) if p == prefix] for prefix in PREFIX_ORDER]
    return [g for g in groups if g]


class GroupedOneVsAllAUC(Objective):
    def __init__(self, config: OVAAUCConfig, context: ObjectiveContext):
        super().__init__(config)
        self.groups = prefix_groups(context.labels)
        self.num_substeps = config.substeps(context.labels)
        self.margins = LabelAUCMargins(context, config.margin)

    def forward(self, output: HeadOutput, labels: torch.Tensor, substep: int = 0) -> torch.Tensor:
        self.check_substep(substep)
        return self.margins(output, labels, self.groups[substep])


@OBJECTIVES.register("ova_auc", config=OVAAUCConfig)
def build(config: OVAAUCConfig, context: ObjectiveContext) -> GroupedOneVsAllAUC:
    """AUCM per label head, one PESG step per B / I / O label group (Nguyen et al. 2023b's OVA-AUC, Alg. 1)."""
    return GroupedOneVsAllAUC(config, context)
