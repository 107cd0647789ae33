"""The one-vs-all reformulation of Nguyen et al. 2023b (sec. III), shared by OVA-AUC and OVA-AUC-MAML.

The `ova` head gives one logit per label (O, B-x, I-x); label k's binary task has y_k = +1 iff the
gold label is k. Each task has its own AUC margin loss (a_k, b_k, alpha_k; imratio = share of label k
among training words), Nguyen et al. 2023b, eq. 1. A label with no training word has imratio 0 and
a loss identically 0, so it is never trained; decoding, in the head, is the argmax over the scores
of the other labels (Nguyen et al. 2023b, eq. 2, which takes all K; see `models.heads.ova`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from nerplat.models.heads.base import HeadOutput
from nerplat.objectives.aucm import AUCMarginLoss
from nerplat.objectives.base import ObjectiveContext, check_width, labelled_words, zero_loss


class LabelAUCMargins(nn.Module):
    """One `AUCMarginLoss` per label; `forward` sums the AUCM of the chosen labels."""

    def __init__(self, context: ObjectiveContext, margin: float):
        super().__init__()
        total = sum(context.label_counts)
        self.per_label = nn.ModuleList(
            AUCMarginLoss(margin, count / total if total else 0.0) for count in context.label_counts
        )

    def forward(self, output: HeadOutput, labels: torch.Tensor, label_ids: Sequence[int]) -> torch.Tensor:
        check_width(output.scores, len(self.per_label), "a one-vs-all objective")
        logits, gold = labelled_words(output, labels)
        if gold.numel() == 0:
            return zero_loss(output)
        scores = torch.sigmoid(logits)
        return torch.stack([self.per_label[k](scores[:, k], gold == k) for k in label_ids]).sum()
