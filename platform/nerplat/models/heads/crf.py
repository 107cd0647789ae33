"""CRF head: linear emissions per word and a word-level linear-chain CRF, decoded by Viterbi."""

from __future__ import annotations

import torch
from torch import nn

from nerplat.models.linear_chain_crf import CRF
from nerplat.models.heads.base import HeadConfig, HeadOutput, HeadServing
from nerplat.models.heads.registry import HEADS


class CRFHead(nn.Module):
    """Optional `features` module (e.g. a BiLSTM) between the word states and the emissions."""

    def __init__(self, num_labels: int, emissions_from: int, features: nn.Module | None = None):
        super().__init__()
        self.features = features
        self.emissions = nn.Linear(emissions_from, num_labels)
        self.crf = CRF(num_labels)

    def forward(self, word_states: torch.Tensor, mask: torch.Tensor) -> HeadOutput:
        if self.features is not None:
            word_states = self.features(word_states, mask)
        return HeadOutput(scores=self.emissions(word_states), mask=mask, crf=self.crf)

    def decode(self, output: HeadOutput) -> list[list[int]]:
        return self.crf.viterbi(output.scores, output.mask)


@HEADS.register("crf", config=HeadConfig, traits=HeadServing(decoding="CRF Viterbi"))
def build(config: HeadConfig, *, labels: list[str], hidden_size: int) -> CRFHead:
    """Linear emissions and a word-level linear-chain CRF; Viterbi decoding."""
    return CRFHead(len(labels), hidden_size)
