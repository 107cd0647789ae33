"""The NER model: a transformer encoder, the state of each word's first sub-token, dropout, a head."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch
from pydantic import BaseModel
from torch import nn

from nerplat.config.trial import Component
from nerplat.models.encoder_registry import Encoder
from nerplat.models.heads import HEADS
from nerplat.models.heads.base import HeadConfig, HeadOutput
from nerplat.models.length_cut import cheapest_cut


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
        """Encoder states at each word's first sub-token: [B, W, hidden].

        In training on a CPU the rows are encoded in length-sorted pieces, each padded only to its own
        longest (`length_pieces`): a window's states do not depend on the other rows, and a training
        batch drawn at random pads less and trains faster (`models.length_cut`). Evaluation batches
        arrive sorted by length and cut already (`trial.batching`), and encoders that declare
        `pads_for_free` (word embeddings) gain nothing from pieces.
        """
        in_pieces = self.training and not getattr(self.encoder, "pads_for_free", False)
        lengths = batch.attention_mask.sum(1)
        pieces = length_pieces(lengths) if in_pieces else []
        if len(pieces) < 2:
            return self._encode(batch, slice(None), batch.input_ids.shape[1])
        # The sub-token embeddings are looked up once for every piece: a lookup per piece made the
        # backward pass build a dense vocabulary-sized gradient per piece and add them up
        # (docs/performance.md, "One embedding lookup per batch").
        embedded = self.encoder.get_input_embeddings()(batch.input_ids)
        parts = [self._encode(batch, rows, int(lengths[rows[0]]), embedded) for rows in pieces]
        order = torch.cat(pieces)
        return torch.cat(parts).index_select(0, torch.argsort(order))

    def _encode(
        self, batch: WordBatch, rows: torch.Tensor | slice, tokens: int, embedded: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Word states of some rows of the batch, their sub-tokens cut to the first `tokens`; from the
        batch's sub-token embeddings `embedded` when given, else from its ids."""
        # MRC batches mark query and context as two segments (Li et al.); word batches have one, and
        # encoders without segments (DistilBERT) must not be passed any.
        segments = {"token_type_ids": batch.token_type_ids[rows, :tokens]} if hasattr(batch, "token_type_ids") else {}
        inputs = {"attention_mask": batch.attention_mask[rows, :tokens]}
        if embedded is None:
            inputs["input_ids"] = batch.input_ids[rows, :tokens]
        else:
            inputs["inputs_embeds"] = embedded[rows, :tokens]
        states = self.encoder(**inputs, **segments).last_hidden_state
        word_starts = batch.word_starts[rows]
        return states.gather(1, word_starts.unsqueeze(-1).expand(-1, -1, states.shape[-1]))

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


def length_pieces(lengths: torch.Tensor) -> list[torch.Tensor]:
    """Row indices of a batch's encoder passes, from its rows' real sub-tokens. On a CPU, where compute
    follows padded sub-tokens: the rows sorted by length, longest first, and cut where padding plus
    `length_cut.BATCH_COST_TOKENS` a pass is least (`cheapest_cut`). Elsewhere (a GPU pads almost for
    free): every row in one pass."""
    if lengths.device.type != "cpu" or len(lengths) < 2:
        return [torch.arange(len(lengths), device=lengths.device)]
    sizes = lengths.numpy()
    order = np.argsort(-sizes, kind="stable")
    whole = len(order) * max(int(sizes.max()), 1)
    return [torch.from_numpy(rows) for rows in cheapest_cut(order, sizes, len(order), whole)]


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
