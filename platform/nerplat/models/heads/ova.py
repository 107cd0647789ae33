"""One-vs-all head (Nguyen et al. 2023b): one binary logit per label, decoded by argmax over the K scores (eq. 2).

The layer is the softmax head's; what differs is how objectives read the scores (K independent
sigmoids: OVA-BCE, OVA-AUC), so the head has its own name and specs cannot pair it with the wrong loss
by accident.
"""

from __future__ import annotations

from nerplat.models.heads.base import HeadConfig
from nerplat.models.heads.registry import HEADS
from nerplat.models.heads.softmax import SoftmaxHead


@HEADS.register("ova", config=HeadConfig)
def build(config: HeadConfig, *, labels: list[str], hidden_size: int) -> SoftmaxHead:
    """One binary logit per label (O, B-x, I-x); argmax over the K scores (Nguyen et al. 2023b, eq. 2)."""
    return SoftmaxHead(hidden_size, len(labels))
