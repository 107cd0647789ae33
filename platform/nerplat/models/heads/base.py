"""The contract between heads, objectives and decoding.

A head maps encoder states gathered at each word's first sub-token to word-level scores; objectives
read `HeadOutput`, and the head alone turns scores into label ids (argmax, Viterbi, Algorithm 1).
Labels are word-level ids into the corpus label list (`Corpus.labels()`: O first), -100 where a
position is padding.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class HeadOutput:
    scores: torch.Tensor  # [batch, words, K]: logits (softmax, ova), emissions (crf), K=2 (en, be) for two_task
    mask: torch.Tensor  # [batch, words] bool: real words
    crf: nn.Module | None = None  # the head's CRF layer, for the NLL objective


IGNORE = -100
