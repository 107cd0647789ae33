"""A CoNLL-like label set, a tiny tagger that produces `HeadOutput`s for every head, and helpers."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from nerplat.models.heads.base import IGNORE, HeadOutput
from nerplat.objectives import OBJECTIVES, ObjectiveContext, build_objective

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
COUNTS = [800, 60, 20, 80, 40]


class LinearChainCRF(nn.Module):
    """Just enough CRF for the objective: per-sentence NLL by the forward algorithm."""

    def __init__(self, num_tags: int):
        super().__init__()
        self.transitions = nn.Parameter(torch.randn(num_tags, num_tags) * 0.1)

    def nll(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch = torch.arange(emissions.shape[0])
        score = emissions[batch, 0, tags[:, 0]]
        alpha = emissions[:, 0]
        for t in range(1, emissions.shape[1]):
            on = mask[:, t]
            step = emissions[batch, t, tags[:, t]] + self.transitions[tags[:, t - 1], tags[:, t]]
            score = score + step * on
            moved = torch.logsumexp(alpha[:, :, None] + self.transitions + emissions[:, t, None, :], dim=1)
            alpha = torch.where(on[:, None], moved, alpha)
        return torch.logsumexp(alpha, dim=-1) - score


class TinyTagger(nn.Module):
    """Embedding "encoder" + linear head; `width` scores per word."""

    def __init__(self, width: int, crf: bool = False, vocab: int = 50, hidden: int = 8):
        super().__init__()
        self.encoder = nn.Sequential(nn.Embedding(vocab, hidden), nn.LayerNorm(hidden))
        self.head = nn.Linear(hidden, width)
        self.crf = LinearChainCRF(width) if crf else None

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> HeadOutput:
        return HeadOutput(self.head(self.encoder(ids)), mask, self.crf)


def output_of(scores: torch.Tensor, labels: torch.Tensor, crf: nn.Module | None = None) -> HeadOutput:
    return HeadOutput(scores, labels != IGNORE, crf)


def make(name: str, context: ObjectiveContext, **params):
    return build_objective(name, params, context)


def registered_examples(*, mrc: bool) -> list:
    """Every parameter set in the `examples` of every registered objective, as pytest params (name, params).

    `mrc` picks the objectives that train the MRC head, which read another output than `TinyTagger`'s.
    """
    return [
        pytest.param(entry.name, params, id=f"{entry.name}-{i}")
        for entry in OBJECTIVES.entries()
        if (entry.config.default_head == "mrc") == mrc
        for i, params in enumerate(entry.examples)
    ]
