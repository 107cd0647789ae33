"""The encoder registry (`ENCODERS`) and what its entries give: an `Encoder`, or a `FittedOnTrain` recipe.

Entries register from their own modules (`models/encoders.py`: transformers; `models/word_embeddings.py`:
word vectors made from the training split); `models/__init__.py` imports both, so a registry read
through any `nerplat.models` module is full. `models.encoders.load_encoder` builds a trial's copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from pydantic import BaseModel
from torch import nn

from nerplat.data.corpus import Sentence
from nerplat.registry import Registry

ENCODERS: Registry[Callable[[BaseModel], Any]] = Registry("encoder")
"""Factories return (tokenizer, model) as read, or a `FittedOnTrain`; `load_encoder` hands each trial its own copy."""


@dataclass(frozen=True)
class Encoder:
    """A tokenizer and a trainable transformer whose last hidden states the tagger reads."""

    name: str
    tokenizer: Any  # a fast (Rust-backed) transformers tokenizer: alignment needs word_ids()
    model: nn.Module  # returns `.last_hidden_state` [batch, tokens, hidden_size]
    hidden_size: int


@runtime_checkable
class FittedOnTrain(Protocol):
    """What an entry returns when its encoder is made from the trial's training split (word embeddings)."""

    def fit(self, name: str, train: Sequence[Sentence], seed: int) -> Encoder: ...
