"""The contract of the MRC objectives (head `mrc`; Li et al. 2020 sec. 3.3, Nemoto et al. 2024, Table 6).

Li et al. train three binary tasks per (window, query) example and sum their losses:

    L = w_start L_start + w_end L_end + w_match L_match

with the weights divided by their sum, as ShannonAI's trainer does (`weight_start`, `weight_end`,
`weight_span`, 1:1:1 by default; train/mrc_ner_trainer.py `compute_loss`). The targets come from one
label tensor (`MRCBatch.labels`: per context word, the position of the last word of the gold span
of the example's type that starts there, -1 for none, IGNORE on padding):

    start_i = [labels_i >= 0],   end_j = [some i has labels_i = j],   match_ij = [labels_i = j].

Positions: start and end are scored at every real context word; match at every pair i <= j of real
words (ShannonAI's ``span_loss_candidates="all"``, its default). Each registered loss says how one
task's logits and targets become a loss (`task_loss`); BCE and focal are means of a loss per
position (`position_losses`), which MoM (`mrc_mom`) also sums over the majority positions.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from pydantic import Field, model_validator

from nerplat.models.heads.base import IGNORE
from nerplat.models.heads.mrc import MRCOutput
from nerplat.objectives.base import Objective, ObjectiveConfig

TASKS = ("start", "end", "match")


class MRCObjectiveConfig(ObjectiveConfig):
    heads: ClassVar[tuple[str, ...]] = ("mrc",)
    default_head: ClassVar[str] = "mrc"

    start_weight: float = Field(1.0, ge=0.0, description="Weight of the start loss (ShannonAI weight_start).")
    end_weight: float = Field(1.0, ge=0.0, description="Weight of the end loss (ShannonAI weight_end).")
    match_weight: float = Field(1.0, ge=0.0, description="Weight of the span-match loss (ShannonAI weight_span).")

    @model_validator(mode="after")
    def _some_weight(self) -> MRCObjectiveConfig:
        if self.start_weight + self.end_weight + self.match_weight <= 0:
            raise ValueError("start_weight, end_weight and match_weight cannot all be 0")
        return self

    def task_weights(self) -> dict[str, float]:
        """Weights of start, end and match, normalised to sum to 1."""
        raw = {"start": self.start_weight, "end": self.end_weight, "match": self.match_weight}
        total = sum(raw.values())
        return {task: weight / total for task, weight in raw.items()}


def mrc_tasks(output: MRCOutput, labels: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Logits and float targets ``[n]`` of each task's scored positions (see the module docstring)."""
    if not isinstance(output, MRCOutput):
        raise ValueError(f"MRC objectives train the 'mrc' head, not a head giving {type(output).__name__}")
    if output.start.shape != labels.shape:
        raise ValueError(f"start logits {tuple(output.start.shape)} do not match labels {tuple(labels.shape)}")
    real = (labels != IGNORE) & output.mask.bool()
    words = labels.shape[1]
    positions = torch.arange(words, device=labels.device)
    match_target = labels.unsqueeze(2) == positions  # [R, W, W]: labels_i == j
    pairs = real.unsqueeze(2) & real.unsqueeze(1) & (positions.unsqueeze(1) <= positions)
    start_target, end_target = labels >= 0, match_target.any(dim=1)
    return {
        "start": (output.start[real].float(), start_target[real].float()),
        "end": (output.end[real].float(), end_target[real].float()),
        "match": (output.match[pairs].float(), match_target[pairs].float()),
    }


class MRCObjective(Objective):
    """Weighted sum over the three tasks of `task_loss`."""

    config: MRCObjectiveConfig

    def task_loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, output: MRCOutput, labels: torch.Tensor, substep: int = 0) -> torch.Tensor:
        self.check_substep(substep)
        tasks = mrc_tasks(output, labels)
        if tasks["start"][1].numel() == 0:  # no real word in the batch: keep the graph connected
            return output.start.sum() * 0.0 + output.end.sum() * 0.0 + output.match.sum() * 0.0
        weights = self.config.task_weights()
        return sum(weights[task] * self.task_loss(*tasks[task]) for task in TASKS)


class PositionwiseMRCObjective(MRCObjective):
    """Objectives whose task loss is the mean over positions of a loss per position (BCE, focal)."""

    def position_losses(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Loss ``[n]`` of each position from its logit and 0/1 target."""
        raise NotImplementedError

    def task_loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.position_losses(logits, targets).mean()
