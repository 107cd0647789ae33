"""One-vs-all head (Nguyen et al. 2023b): one binary logit per label, decoded by argmax over the K scores (eq. 2).

The layer is the softmax head's; what differs is how objectives read the scores (K independent
sigmoids: OVA-BCE, OVA-AUC), so the head has its own name and specs cannot pair it with the wrong loss
by accident.

Deviation: eq. 2 is an argmax over all K labels; we leave out labels with no training word. With the
paper's prior-free eq. 1c such a label would still be trained on negatives; with LibAUC's prior-weighted
("v1") AUCM we use (`objectives.aucm`) its loss is identically 0, so its score stays at initialisation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from nerplat.models.heads.base import HeadConfig, HeadOutput, HeadServing, argmax_decode
from nerplat.models.heads.registry import HEADS
from nerplat.models.heads.softmax import SoftmaxHead


class OneVsAllHead(SoftmaxHead):
    """`trained_labels` (a buffer, saved with the weights): the labels the argmax may pick, all until
    `leave_out_untrained` is given the training counts."""

    def __init__(self, hidden_size: int, num_labels: int):
        super().__init__(hidden_size, num_labels)
        self.register_buffer("trained_labels", torch.ones(num_labels, dtype=torch.bool))

    def leave_out_untrained(self, label_counts: Sequence[int]) -> None:
        self.trained_labels.copy_(torch.tensor(label_counts) > 0)

    def decode(self, output: HeadOutput) -> list[list[int]]:
        scores = output.scores.masked_fill(~self.trained_labels, float("-inf"))
        return argmax_decode(HeadOutput(scores=scores, mask=output.mask))

    def _load_from_state_dict(self, state_dict: dict[str, torch.Tensor], prefix: str, *args: Any, **kwargs: Any) -> None:
        # Models saved before `trained_labels` existed decoded every label, and still do.
        state_dict.setdefault(prefix + "trained_labels", torch.ones_like(self.trained_labels))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def sigmoid_confidence(scores: torch.Tensor, ids: torch.Tensor, outside: int) -> torch.Tensor:
    """The decoded label's own sigmoid."""
    return torch.sigmoid(scores).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


@HEADS.register(
    "ova", config=HeadConfig, traits=HeadServing(decoding="one-vs-all sigmoids, argmax", confidence=sigmoid_confidence)
)
def build(config: HeadConfig, *, labels: list[str], hidden_size: int) -> OneVsAllHead:
    """One binary logit per label (O, B-x, I-x); argmax over the K scores of labels with training words (2023b, eq. 2)."""
    return OneVsAllHead(hidden_size, len(labels))
