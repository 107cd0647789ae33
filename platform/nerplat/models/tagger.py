"""The NER model: a transformer encoder, the state of each word's first sub-token, dropout, a head."""

from __future__ import annotations

from typing import Protocol

import torch
from pydantic import BaseModel
from torch import nn

from nerplat.config.trial import Component
from nerplat.models.encoder_registry import Encoder
from nerplat.models.heads import HEADS
from nerplat.models.heads.base import HeadConfig, HeadOutput


class WordBatch(Protocol):
    """What the tagger reads from a batch (`nerplat.trial.batching.Batch` has these and more)."""

    input_ids: torch.Tensor  # [B, T]
    attention_mask: torch.Tensor  # [B, T]
    word_starts: torch.Tensor  # [B, W] sub-token index of each word's first sub-token
    word_mask: torch.Tensor  # [B, W] bool


class Tagger(nn.Module):
    def __init__(self, encoder: nn.Module, head: nn.Module, *, dropout: float):
        super().__init__()
        self.encoder = encoder
        self.dropout = nn.Dropout(dropout)
        self.head = head

    def word_states(self, batch: WordBatch) -> torch.Tensor:
        """Encoder states at each word's first sub-token: [B, W, hidden]."""
        # MRC batches mark query and context as two segments (Li et al.); word batches have one, and
        # encoders without segments (DistilBERT) must not be passed any.
        segments = {"token_type_ids": batch.token_type_ids} if hasattr(batch, "token_type_ids") else {}
        states = self.encoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask, **segments).last_hidden_state
        index = batch.word_starts.unsqueeze(-1).expand(-1, -1, states.shape[-1])
        return states.gather(1, index)

    def forward(self, batch: WordBatch) -> HeadOutput:
        return self.head(self.dropout(self.word_states(batch)), batch.word_mask)

    def decode(self, output: HeadOutput) -> list[list[int]]:
        """Label ids per window, one per real word (the head decides how: argmax, Viterbi, Algorithm 1)."""
        return self.head.decode(output)

    def parameter_groups(self) -> dict[str, list[nn.Parameter]]:
        """Trainable parameters of the pretrained encoder and of the head, for separate learning rates."""
        return {
            "encoder": [p for p in self.encoder.parameters() if p.requires_grad],
            "head": [p for p in self.head.parameters() if p.requires_grad],
        }


def head_config(head: Component) -> BaseModel:
    """The head's config model, validated from the spec's parameters (errors name `head.<field>`)."""
    return HEADS.config(head.name, head.params, at="head")


def head_variant(head: Component) -> str:
    """The trial variant the head's registration names (`HeadConfig.variant`): how its trials read and train."""
    return HEADS.get(head.name, at="head").config.variant


def build_tagger(encoder: Encoder, head: Component, labels: list[str]) -> Tagger:
    """A tagger for `labels` from a loaded encoder and the head a spec names (with its parameters)."""
    entry = HEADS.get(head.name)
    if not issubclass(entry.config, HeadConfig):  # the config of every torch head (its dropout included)
        raise ValueError(
            f"head '{head.name}' is fitted outside the torch loop: its trials run as the '{head_variant(head)}' "
            "variant (nerplat.trial.variant_registry), not through a Tagger"
        )
    config = head_config(head)  # the tagger reads dropout from it too
    module = entry.factory(config, labels=list(labels), hidden_size=encoder.hidden_size)
    return Tagger(encoder.model, module, dropout=config.dropout)
