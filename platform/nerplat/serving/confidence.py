"""How sure a head is of each word's decoded label: the probability its scores give that label.

Only heads whose scores are probabilities have one: softmax (the label's softmax probability, what
Hugging Face's token-classification pipeline reports), ova (the label's own sigmoid), two_task (the
entity sigmoid for B/I words, one minus it for O words). CRF heads decode with Viterbi over
unnormalised emissions and transitions: they have no per-word probability here, so none is given.
"""

from __future__ import annotations

import torch

from nerplat.models.heads.base import HeadOutput, unpad


def word_confidences(head: str, output: HeadOutput, decoded: list[list[int]], outside: int) -> list[list[float]] | None:
    """Per window, the confidence of each decoded word label; None for heads without probabilities.

    `outside` is the id of the O label (two_task reads it).
    """
    if head not in ("softmax", "ova", "two_task"):
        return None
    ids = torch.zeros(output.mask.shape, dtype=torch.long, device=output.scores.device)
    for row, labels in enumerate(decoded):
        ids[row, : len(labels)] = torch.as_tensor(labels, dtype=torch.long)
    scores = output.scores.float()
    if head == "two_task":
        entity = torch.sigmoid(scores[..., 0])
        chosen = torch.where(ids == outside, 1.0 - entity, entity)
    else:
        probabilities = torch.softmax(scores, dim=-1) if head == "softmax" else torch.sigmoid(scores)
        chosen = probabilities.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    return unpad(chosen, output.mask)
