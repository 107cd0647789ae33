"""MRC examples (Li et al. 2020): `MRCFeatures` (made from sentences by `trial.mrc_features`), padded
(window, query) batches of them, and per-window predictions -> sentences. The features batch and join
themselves (`trial.variant.Examples`), as word windows do (`trial.batching`).

A batch holds whole windows with all K of their queries, window-major (rows w*K .. w*K + K - 1 are
window w): the K examples of a window share their context length, so they pad alike, and the head
can resolve overlaps between types inside one batch. `train.batch_size` counts examples, as in Li
et al. and Nemoto et al. 2024 (batch 32), so a batch holds ceil(batch_size / K) windows.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Iterator, Sequence

import numpy as np
import torch

from nerplat.models.heads.base import IGNORE
from nerplat.trial import batching
from nerplat.trial.device import to_device


@dataclass(frozen=True)
class PairLayout:
    """Where a tokenizer puts its special tokens around a (query, context) pair, and their segments."""

    prefix: tuple[int, ...]  # [CLS] for BERT
    middle: tuple[int, ...]  # [SEP] for BERT, </s></s> for RoBERTa
    suffix: tuple[int, ...]  # [SEP]
    query_segment: int  # token type id of prefix, query and middle (0)
    context_segment: int  # token type id of context and suffix (1 for BERT, 0 for RoBERTa)

    @property
    def specials(self) -> int:
        return len(self.prefix) + len(self.middle) + len(self.suffix)


@dataclass(frozen=True)
class MRCFeatures:
    """All windows of one split with every word they contain, stored flat like `WindowFeatures`."""

    context_ids: np.ndarray  # int32 [all context sub-tokens], no special tokens
    token_offsets: np.ndarray  # int64 [windows + 1]
    word_starts: np.ndarray  # int32 [all window words]: index into the window's context
    span_ends: np.ndarray  # int32 [all window words, types]: window position of the span's last word, or -1
    tags: np.ndarray  # int64 [all window words]: label ids
    owned: np.ndarray  # bool [all window words]: the window owns the word (predicts it for the sentence)
    word_index: np.ndarray  # int32 [all window words]: position in the sentence
    word_offsets: np.ndarray  # int64 [windows + 1]
    sentence: np.ndarray  # int32 [windows]
    sentence_lengths: np.ndarray  # int32 [sentences]
    queries: tuple[tuple[int, ...], ...]  # sub-token ids of each type's query
    types: tuple[str, ...]
    layout: PairLayout
    pad_id: int

    def __len__(self) -> int:
        """Examples, i.e. (window, query) pairs: what `train.batch_size` counts, as in Li et al."""
        return self.num_windows * len(self.types)

    @property
    def num_windows(self) -> int:
        return len(self.sentence)

    @property
    def num_sentences(self) -> int:
        return len(self.sentence_lengths)

    @property
    def labels(self) -> np.ndarray:
        """Label ids of owned words, IGNORE elsewhere: each sentence word counted once (label counts)."""
        return np.where(self.owned, self.tags, IGNORE)

    def token_counts(self) -> np.ndarray:
        """Context sub-tokens per window: what batches are grouped by."""
        return np.diff(self.token_offsets)

    def batches(
        self, batch_size: int, *, seed: int | None, batches_per_group: int = 16, max_tokens: int | None = None
    ) -> Iterator[MRCBatch]:
        return iterate_batches(self, batch_size, seed=seed, batches_per_group=batches_per_group, max_tokens=max_tokens)

    def join(self, windows: Sequence[int], predictions: Sequence[Sequence[int]]) -> list[list[int]]:
        return join_windows(self, windows, predictions)


@dataclass(frozen=True)
class MRCBatch:
    input_ids: torch.Tensor  # [R, T] long: [CLS] query [SEP] context [SEP], R = windows x types
    attention_mask: torch.Tensor  # [R, T] long
    token_type_ids: torch.Tensor  # [R, T] long: query segment, then context segment
    word_starts: torch.Tensor  # [R, W] long: index into T of each window word's first sub-token
    word_mask: torch.Tensor  # [R, W] bool: real words
    labels: torch.Tensor  # [R, W] long: window position of the gold span's last word, -1 none, IGNORE padding
    windows: torch.Tensor  # [B] long: window indices, to join predictions back

    def to(self, device: torch.device | str) -> "MRCBatch":
        return MRCBatch(**{f.name: to_device(getattr(self, f.name), device) for f in fields(self)})

    def real_tokens(self) -> int:
        """Encoder sub-tokens that are not padding (queries and all K copies of the context included)."""
        return int(self.attention_mask.sum())


def collate_mrc(features: MRCFeatures, windows: Sequence[int]) -> MRCBatch:
    windows = np.asarray(windows, dtype=np.int64)
    layout, types = features.layout, len(features.types)
    token_counts = features.token_offsets[windows + 1] - features.token_offsets[windows]
    word_counts = features.word_offsets[windows + 1] - features.word_offsets[windows]
    rows = len(windows) * types
    longest_query = max(len(q) for q in features.queries)
    width, max_words = int(token_counts.max()) + longest_query + layout.specials, int(word_counts.max())
    input_ids = np.full((rows, width), features.pad_id, dtype=np.int64)
    attention_mask = np.zeros((rows, width), dtype=np.int64)
    token_type_ids = np.zeros((rows, width), dtype=np.int64)
    word_starts = np.zeros((rows, max_words), dtype=np.int64)
    labels = np.full((rows, max_words), IGNORE, dtype=np.int64)
    for w_row, window in enumerate(windows):
        context = features.context_ids[features.token_offsets[window] : features.token_offsets[window + 1]]
        words = slice(features.word_offsets[window], features.word_offsets[window + 1])
        for k, query in enumerate(features.queries):
            row, head = w_row * types + k, len(layout.prefix) + len(query) + len(layout.middle)
            ids = [*layout.prefix, *query, *layout.middle, *context, *layout.suffix]
            input_ids[row, : len(ids)] = ids
            attention_mask[row, : len(ids)] = 1
            token_type_ids[row, head : len(ids)] = layout.context_segment
            token_type_ids[row, :head] = layout.query_segment
            word_starts[row, : word_counts[w_row]] = head + features.word_starts[words]
            labels[row, : word_counts[w_row]] = features.span_ends[words, k]
    return MRCBatch(
        input_ids=torch.from_numpy(input_ids),
        attention_mask=torch.from_numpy(attention_mask),
        token_type_ids=torch.from_numpy(token_type_ids),
        word_starts=torch.from_numpy(word_starts),
        word_mask=torch.from_numpy(labels != IGNORE),
        labels=torch.from_numpy(labels),
        windows=torch.from_numpy(windows),
    )


def iterate_batches(
    features: MRCFeatures, batch_size: int, *, seed: int | None, batches_per_group: int = 16, max_tokens: int | None = None
) -> Iterator[MRCBatch]:
    """Length-grouped batches of ceil(batch_size / K) windows, each with its K queries; with
    `max_tokens` (evaluation) no more windows than their K padded rows fit."""
    windows_per_batch = -(-batch_size // len(features.types))
    lengths = features.token_counts()
    if max_tokens is not None:  # a window costs K rows of query and context: the same order, its padded size
        lengths = len(features.types) * (lengths + max(len(q) for q in features.queries) + features.layout.specials)
    for windows in batching.length_grouped_batches(
        lengths, windows_per_batch, seed=seed, batches_per_group=batches_per_group, max_tokens=max_tokens
    ):
        yield collate_mrc(features, windows)


@dataclass(frozen=True)
class _OwnedWords:
    """The owned words of MRC windows, in the shape `batching.join_windows` reads."""

    word_offsets: np.ndarray
    word_index: np.ndarray
    sentence: np.ndarray
    sentence_lengths: np.ndarray


def join_windows(
    features: MRCFeatures, windows: Sequence[int], predictions: Sequence[Sequence[int]]
) -> list[list[int]]:
    """Per-sentence label ids from per-window predictions over *all* words of each window: each
    sentence word takes the prediction of the window that owns it."""
    if len(windows) != len(predictions):
        raise ValueError(f"{len(windows)} windows but {len(predictions)} predictions")
    owned_predictions = []
    for window, window_predictions in zip(windows, predictions):
        owned = features.owned[features.word_offsets[window] : features.word_offsets[window + 1]]
        if len(window_predictions) != len(owned):
            raise ValueError(f"window {window} has {len(owned)} words but {len(window_predictions)} predictions")
        owned_predictions.append([p for p, keep in zip(window_predictions, owned) if keep])
    owned_counts = np.add.reduceat(features.owned.astype(np.int64), features.word_offsets[:-1]) if features.num_windows else []
    index = _OwnedWords(
        word_offsets=np.concatenate([[0], np.cumsum(owned_counts)]).astype(np.int64),
        word_index=features.word_index[features.owned],
        sentence=features.sentence,
        sentence_lengths=features.sentence_lengths,
    )
    return batching.join_windows(index, windows, owned_predictions)  # type: ignore[arg-type]  (reads only these four)
