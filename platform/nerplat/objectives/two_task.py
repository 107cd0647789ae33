"""The two-task reformulation of Nguyen et al. 2023a (Fig. 1-2), shared by CE-2T, AUC-2T and COMAUC-2T.

A word's BIO tag becomes two binary targets: y_en = +1 iff the tag is not O (inside an entity) and
y_be = +1 iff the tag starts with B (begins an entity). The `two_task` head gives one logit per task:
``scores[..., 0]`` for en, ``scores[..., 1]`` for be; its decoder applies Nguyen et al. 2023a, Algorithm 1.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from nerplat.models.heads.base import HeadOutput
from nerplat.objectives.aucm import AUCMarginLoss
from nerplat.objectives.base import ObjectiveContext, bio_prefix, check_width, labelled_words


class TwoTaskTargets(nn.Module):
    """Maps label ids to the (en, be) targets of Nguyen et al. 2023a, Fig. 1."""

    def __init__(self, labels: list[str]):
        super().__init__()
        prefixes = [bio_prefix(label) for label in labels]
        self.register_buffer("entity", torch.tensor([p != "O" for p in prefixes]), persistent=False)
        self.register_buffer("begin", torch.tensor([p == "B" for p in prefixes]), persistent=False)

    def forward(self, label_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.entity[label_ids], self.begin[label_ids]


def two_task_words(
    output: HeadOutput, labels: torch.Tensor, targets: TwoTaskTargets
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logits ``[N, 2]`` and boolean en, be targets ``[N]`` of the labelled words."""
    check_width(output.scores, 2, "a two-task objective")
    logits, gold = labelled_words(output, labels)
    entity, begin = targets(gold)
    return logits, entity, begin


def two_task_bce(logits: torch.Tensor, entity: torch.Tensor, begin: torch.Tensor) -> torch.Tensor:
    """BCE(en) + BCE(be), each a mean over labelled words (CE-2T)."""
    return F.binary_cross_entropy_with_logits(logits[:, 0], entity.float()) + F.binary_cross_entropy_with_logits(
        logits[:, 1], begin.float()
    )


class TwoTaskAUC(nn.Module):
    """AUCM(w_en) + lambda * AUCM(w_be) on sigmoid scores (Nguyen et al. 2023a, eq. 4), each task with its own a, b, alpha
    and its training-set positive share as imratio (unused by the prior-free form, `aucm`)."""

    def __init__(self, context: ObjectiveContext, margin: float, lambda_: float, prior_free: bool = False):
        super().__init__()
        prefixes = [bio_prefix(label) for label in context.labels]
        self.lambda_ = lambda_
        self.entity = AUCMarginLoss(margin, context.positive_share([p != "O" for p in prefixes]), prior_free)
        self.begin = AUCMarginLoss(margin, context.positive_share([p == "B" for p in prefixes]), prior_free)

    def forward(self, logits: torch.Tensor, entity: torch.Tensor, begin: torch.Tensor) -> torch.Tensor:
        scores = torch.sigmoid(logits)
        return self.entity(scores[:, 0], entity) + self.lambda_ * self.begin(scores[:, 1], begin)
