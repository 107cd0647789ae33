"""One-vs-all head (Nguyen et al. 2023b): one binary logit per label, decoded by argmax over the K scores (eq. 2).

The layer is the softmax head's; what differs is how objectives read the scores (K independent
sigmoids: OVA-BCE, OVA-AUC), so the head has its own name and specs cannot pair it with the wrong loss
by accident.
"""

from __future__ import annotations

import torch

from nerplat.models.heads.base import HeadConfig, HeadServing
from nerplat.models.heads.registry import HEADS
from nerplat.models.heads.softmax import SoftmaxHead


def sigmoid_confidence(scores: torch.Tensor, ids: torch.Tensor, outside: int) -> torch.Tensor:
    """The decoded label's own sigmoid."""
    return torch.sigmoid(scores).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


@HEADS.register(
    "ova", config=HeadConfig, traits=HeadServing(decoding="one-vs-all sigmoids, argmax", confidence=sigmoid_confidence)
)
def build(config: HeadConfig, *, labels: list[str], hidden_size: int) -> SoftmaxHead:
    """One binary logit per label (O, B-x, I-x); argmax over the K scores (Nguyen et al. 2023b, eq. 2)."""
    return SoftmaxHead(hidden_size, len(labels))
