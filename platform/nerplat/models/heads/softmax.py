"""Softmax head: one linear layer to K label logits per word, decoded by argmax (the CE baselines)."""

from __future__ import annotations

import torch
from torch import nn

from nerplat.models.heads.base import HeadConfig, HeadOutput, HeadServing, argmax_decode
from nerplat.models.heads.registry import HEADS


class SoftmaxHead(nn.Module):
    """Optional `features` module (e.g. a BiLSTM) between the word states and the classifier."""

    def __init__(self, hidden_size: int, num_labels: int, features: nn.Module | None = None):
        super().__init__()
        self.features = features
        self.classifier = nn.Linear(hidden_size, num_labels)

    def forward(self, word_states: torch.Tensor, mask: torch.Tensor) -> HeadOutput:
        if self.features is not None:
            word_states = self.features(word_states, mask)
        return HeadOutput(scores=self.classifier(word_states), mask=mask)

    def decode(self, output: HeadOutput) -> list[list[int]]:
        return argmax_decode(output)


def softmax_confidence(scores: torch.Tensor, ids: torch.Tensor, outside: int) -> torch.Tensor:
    """The decoded label's softmax probability, what Hugging Face's token-classification pipeline reports."""
    return torch.softmax(scores, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


@HEADS.register("softmax", config=HeadConfig, traits=HeadServing(confidence=softmax_confidence))
def build(config: HeadConfig, *, labels: list[str], hidden_size: int) -> SoftmaxHead:
    """Linear layer to K label logits per word; argmax decoding."""
    return SoftmaxHead(hidden_size, len(labels))
