"""MRC head (Li et al. 2020, "A Unified MRC Framework for Named Entity Recognition"; Nemoto et al. 2024, Table 6).

Reads (window, query) examples (the `mrc` trial variant's `trial.mrc_batching.MRCBatch`: K consecutive rows per window, one per
entity type) at each context word's first sub-token, and gives, as ShannonAI's `BertQueryNER`
(models/bert_query_ner.py):
- start and end logits: one linear layer each, hidden -> 1;
- span-match logits for every word pair (i, j): `MultiNonLinearClassifier` on [h_i; h_j], i.e.
  Linear(2H, 2H) -> GELU -> dropout -> Linear(2H, 1).
The first layer of the match classifier is split into its halves, W [h_i; h_j] = W_s h_i + W_e h_j,
so each word is projected once and the W x W pairs only add and activate: the same function as the
concatenation, with O(W H^2) instead of O(W^2 H^2) multiply-adds.

Decoding is to flat, typed IOB2 tags over every word of each window (the trial joins the owned words
back into sentences): candidates need start, end and match probabilities above 0.5 (logits > 0, as
ShannonAI's `extract_nested_spans`), and overlaps across and within types are resolved greedily by
score (`nerplat.data.mrc_examples.resolve_overlaps`), so the usual strict span metrics apply unchanged.
Labels and objectives: `nerplat.objectives.mrc_base`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn.functional as F
from pydantic import Field, field_validator
from torch import nn

from nerplat.data.mrc_examples import entity_types, read_queries, resolve_overlaps, spans_to_tags
from nerplat.errors import Problem, UserInputError
from nerplat.models.heads.base import HeadConfig
from nerplat.models.heads.registry import HEADS


class MRCConfig(HeadConfig):
    variant: ClassVar[str] = "mrc"  # trials read (window, query) examples: `nerplat.trial.mrc_session`
    queries: str | None = Field(
        None,
        description="JSON file mapping every entity type to its natural-language query; default: the queries "
        "bundled for the corpus (nerplat/data/mrc_queries/), else 'find all <type> entities in the text.'",
    )

    @field_validator("queries")
    @classmethod
    def _readable(cls, path: str | None) -> str | None:
        """A spec naming an unreadable file fails at validation, before any trial starts."""
        if path is not None:
            try:
                read_queries(Path(path))
            except UserInputError as error:
                raise ValueError(error.problems[0].message) from None
        return path


@dataclass
class MRCOutput:
    start: torch.Tensor  # [R, W] start logits, R = windows x types (window-major)
    end: torch.Tensor  # [R, W] end logits
    match: torch.Tensor  # [R, W, W] span-match logit of (first word i, last word j)
    mask: torch.Tensor  # [R, W] bool: real words


class SpanMatcher(nn.Module):
    """Li et al.'s span-match classifier on [h_i; h_j], with the first layer applied per word."""

    def __init__(self, hidden_size: int, dropout: float):
        super().__init__()
        self.first = nn.Linear(hidden_size, 2 * hidden_size)  # W_s, with the layer's bias
        self.last = nn.Linear(hidden_size, 2 * hidden_size, bias=False)  # W_e
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(2 * hidden_size, 1)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        pairs = self.first(states).unsqueeze(2) + self.last(states).unsqueeze(1)  # [R, W, W, 2H]
        return self.out(self.dropout(F.gelu(pairs))).squeeze(-1)


class MRCHead(nn.Module):
    def __init__(self, hidden_size: int, labels: list[str], dropout: float):
        super().__init__()
        self.types = entity_types(labels)
        if not self.types or "O" not in labels:
            raise UserInputError(
                Problem(f"head 'mrc' needs IOB2 labels with an O and at least one type, got {labels}", path="head")
            )
        self.label_ids = {label: i for i, label in enumerate(labels)}
        self.start = nn.Linear(hidden_size, 1)
        self.end = nn.Linear(hidden_size, 1)
        self.match = SpanMatcher(hidden_size, dropout)

    def forward(self, word_states: torch.Tensor, mask: torch.Tensor) -> MRCOutput:
        return MRCOutput(
            start=self.start(word_states).squeeze(-1),
            end=self.end(word_states).squeeze(-1),
            match=self.match(word_states),
            mask=mask,
        )

    def decode(self, output: MRCOutput) -> list[list[int]]:
        """Label ids over every word of each window (K rows per window), overlaps resolved by score."""
        rows, words = output.mask.shape
        types = len(self.types)
        if rows % types:
            raise ValueError(f"{rows} rows do not hold {types} queries per window")
        real = output.mask.bool()
        pairs = real.unsqueeze(2) & real.unsqueeze(1) & torch.ones(words, words, dtype=torch.bool, device=real.device).triu()
        start, end, match = torch.sigmoid(output.start), torch.sigmoid(output.end), torch.sigmoid(output.match)
        chosen = pairs & (start > 0.5).unsqueeze(2) & (end > 0.5).unsqueeze(1) & (match > 0.5)
        found = chosen.nonzero().tolist()
        scores = (start.unsqueeze(2) * end.unsqueeze(1) * match)[chosen].tolist()
        candidates: list[list[tuple[float, int, int, int]]] = [[] for _ in range(rows // types)]
        for (row, first, last), score in zip(found, scores):
            candidates[row // types].append((score, first, last, row % types))
        lengths = real[::types].sum(dim=1).tolist()
        decoded = []
        for window_candidates, length in zip(candidates, lengths):
            spans = [(self.types[k], first, last) for first, last, k in resolve_overlaps(window_candidates)]
            decoded.append([self.label_ids[tag] for tag in spans_to_tags(spans, length)])
        return decoded


@HEADS.register("mrc", config=MRCConfig)
def build(config: MRCConfig, *, labels: list[str], hidden_size: int) -> MRCHead:
    """Start, end and span-match classifiers per entity-type query (BERT-MRC, Li et al. 2020); flat decoding."""
    return MRCHead(hidden_size, labels, config.dropout)
