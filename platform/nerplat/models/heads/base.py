"""The contract between heads, objectives and decoding.

A head maps encoder states gathered at each word's first sub-token to word-level scores; objectives
read `HeadOutput`, and the head alone turns scores into label ids (argmax, Viterbi, Algorithm 1).
Labels are word-level ids into the corpus label list (`Corpus.labels()`: O first), -100 where a
position is padding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn


@dataclass
class HeadOutput:
    scores: torch.Tensor  # [batch, words, K]: logits (softmax, ova), emissions (crf), K=2 (en, be) for two_task
    mask: torch.Tensor  # [batch, words] bool: real words
    crf: nn.Module | None = None  # the head's CRF layer, for the NLL objective


IGNORE = -100

WordProbabilities = Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]
"""(scores [batch, words, K] as float, decoded label ids [batch, words], id of O) -> [batch, words]."""


@dataclass(frozen=True)
class HeadServing:
    """What serving reads of a head: the `traits` of its registry entry.

    Attributes
    ----------
    decoding : str | None
        How the head turns scores into labels, as an exported MLflow model's README says it
        (None: the head's name).
    confidence : WordProbabilities | None
        The probability the head's scores give each word's decoded label; None for heads whose
        scores are not probabilities (CRF heads decode with Viterbi over unnormalised emissions and
        transitions), which then report no confidence.
    """

    decoding: str | None = None
    confidence: WordProbabilities | None = None


class HeadConfig(BaseModel):
    """What every head's spec entry may say; heads with more parameters extend it."""

    model_config = ConfigDict(extra="forbid")
    variant: ClassVar[str] = "sequence_labelling"
    """How trials of the head read their sentences and train: a name in `nerplat.trial.variant_registry`
    (`sequence_labelling`: word windows, epochs of optimiser steps; `mrc` and `feature_crf` for others)."""

    dropout: float = Field(0.1, ge=0.0, lt=1.0, description="Dropout on the word states before the head.")


def unpad(ids: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
    """Rows of `ids` [batch, words] cut to their real words (masks are a prefix of each row)."""
    lengths = mask.sum(dim=1).tolist()
    return [row[:n] for row, n in zip(ids.tolist(), lengths)]


def argmax_decode(output: HeadOutput) -> list[list[int]]:
    """The highest-scoring label of each word, independently (softmax and one-vs-all heads)."""
    return unpad(output.scores.argmax(dim=-1), output.mask)
