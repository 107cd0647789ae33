"""How sure a head is of each word's decoded label: the probability its scores give that label.

Each head says how in its registry entry (`HeadServing.confidence`: softmax gives the label's softmax
probability, ova its own sigmoid, two_task the entity sigmoid or one minus it); heads whose scores are
not probabilities (CRF heads) say nothing, so none is given.
"""

from __future__ import annotations

import torch

from nerplat.models.heads.base import HeadOutput, unpad
from nerplat.models.heads.registry import head_serving


def word_confidences(head: str, output: HeadOutput, decoded: list[list[int]], outside: int) -> list[list[float]] | None:
    """Per window, the confidence of each decoded word label; None for heads without probabilities.

    `outside` is the id of the O label (two_task reads it).
    """
    confidence = head_serving(head).confidence
    if confidence is None:
        return None
    ids = torch.zeros(output.mask.shape, dtype=torch.long, device=output.scores.device)
    for row, labels in enumerate(decoded):
        ids[row, : len(labels)] = torch.as_tensor(labels, dtype=torch.long)
    return unpad(confidence(output.scores.float(), ids, outside), output.mask)
