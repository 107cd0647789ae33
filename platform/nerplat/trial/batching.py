"""Word windows, the examples of sequence labelling: `WindowFeatures` (made from sentences by
`trial.features`), padded tensor batches of them, and batch predictions -> one tag sequence per sentence.
The features batch and join themselves (`trial.variant.Examples`), as MRC's do (`trial.mrc_batching`).

Batches are grouped by length so padding (wasted compute) stays small: windows are shuffled with a
seed, cut into groups of `batches_per_group` batches, ordered by length inside each group with a
random jitter of about one batch (a window's length rank plus a uniform draw in [0, batch_size)),
cut into batches, and the batches shuffled again. A group holds at most a quarter of the windows
(`MIN_GROUPS`, as Hugging Face's `group_by_length` sampler does), so small training sets get batches
drawn nearly at random: a small set sorted as one group trained short runs to a lower dev F1
(docs/performance.md, "Length groups of at most a quarter, and length pieces"). The jitter makes
batches differ across epochs when a group is several batches, at little more padding than sorting
everything, where random batches pad far more (docs/performance.md, "Figures behind the code's
choices").
On a CPU the tagger encodes a training batch in length pieces (`models.tagger.length_pieces`), which
wins back part of what random batches pad.
Without a seed (evaluation) all windows are sorted by length, which pads least, and `max_tokens` may
bound a batch's padded size (windows x its longest): sorting pads nothing between batches but a
whole split in one batch pads every window to the longest, so the sorted windows are cut where
padding plus a cost per batch is least (`cheapest_cut`). Padding is dynamic: each batch is as long
as its longest window.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Iterator, Sequence

import numpy as np
import torch

from nerplat.models.heads.base import IGNORE
from nerplat.models.length_cut import cheapest_cut
from nerplat.trial.device import to_device

# Training groups per epoch at least: a group sorts at most 1/MIN_GROUPS of the windows by length.
MIN_GROUPS = 4


@dataclass(frozen=True)
class Window:
    """One encoder input and the words it owns."""

    input_ids: np.ndarray  # [tokens] sub-token ids, special tokens included
    word_starts: np.ndarray  # [owned words] index into input_ids of each owned word's first sub-token
    word_index: np.ndarray  # [owned words] position of each owned word in its sentence
    labels: np.ndarray  # [owned words] label ids
    sentence: int  # index of the sentence in its split


@dataclass(frozen=True)
class WindowFeatures:
    """All windows of one split, stored flat: window i is slice offsets[i]:offsets[i + 1]."""

    input_ids: np.ndarray  # int32 [all tokens]
    token_offsets: np.ndarray  # int64 [windows + 1]
    word_starts: np.ndarray  # int32 [all owned words]
    word_index: np.ndarray  # int32 [all owned words]
    labels: np.ndarray  # int64 [all owned words]
    word_offsets: np.ndarray  # int64 [windows + 1]
    sentence: np.ndarray  # int32 [windows]
    sentence_lengths: np.ndarray  # int32 [sentences]: words per sentence, to join windows back
    pad_id: np.ndarray  # int64 scalar: the tokenizer's padding id, for collation

    def __len__(self) -> int:
        return len(self.sentence)

    @property
    def num_sentences(self) -> int:
        return len(self.sentence_lengths)

    def token_counts(self) -> np.ndarray:
        """Sub-tokens per window (special tokens included): what batches are grouped by."""
        return np.diff(self.token_offsets)

    def window(self, i: int) -> Window:
        tokens = slice(self.token_offsets[i], self.token_offsets[i + 1])
        words = slice(self.word_offsets[i], self.word_offsets[i + 1])
        return Window(
            input_ids=self.input_ids[tokens],
            word_starts=self.word_starts[words],
            word_index=self.word_index[words],
            labels=self.labels[words],
            sentence=int(self.sentence[i]),
        )

    def batches(
        self, batch_size: int, *, seed: int | None, batches_per_group: int = 16, max_tokens: int | None = None
    ) -> Iterator[Batch]:
        return iterate_batches(self, batch_size, seed=seed, batches_per_group=batches_per_group, max_tokens=max_tokens)

    def join(self, windows: Sequence[int], predictions: Sequence[Sequence[int]]) -> list[list[int]]:
        return join_windows(self, windows, predictions)


@dataclass(frozen=True)
class Batch:
    input_ids: torch.Tensor  # [B, T] long, padded with the tokenizer's pad id
    attention_mask: torch.Tensor  # [B, T] long, 1 on real sub-tokens
    word_starts: torch.Tensor  # [B, W] long: index into T of each owned word's first sub-token, 0 on padding
    word_mask: torch.Tensor  # [B, W] bool: real words (a prefix of each row)
    labels: torch.Tensor  # [B, W] long: label ids, IGNORE on padding
    windows: torch.Tensor  # [B] long: window indices into the features, to join predictions back

    def to(self, device: torch.device | str) -> "Batch":
        return Batch(**{f.name: to_device(getattr(self, f.name), device) for f in fields(self)})

    def real_tokens(self) -> int:
        """Sub-tokens that are not padding: the tokens a throughput figure should count."""
        return int(self.attention_mask.sum())


def length_grouped_batches(
    lengths: np.ndarray, batch_size: int, *, seed: int | None, batches_per_group: int = 16, max_tokens: int | None = None
) -> list[np.ndarray]:
    """Indices of each batch, in the order to run them.

    Parameters
    ----------
    lengths : length of each item (sub-tokens per window).
    seed : shuffles items, jitters their length order and shuffles batches (training; pass a new
        seed per epoch); None sorts every item by length, longest first, with no randomness
        (evaluation).
    batches_per_group : how many batches' worth of items are sorted together when shuffling, at
        most (a group holds at most 1/`MIN_GROUPS` of the items, one batch at least): larger pads
        less, smaller keeps batch composition more random.
    max_tokens : without a seed, a batch also holds no more items than fit this many padded
        sub-tokens (items x the batch's longest), one at least, and the sorted items are cut where
        it costs least (`cheapest_cut`); None: `batch_size` items a batch.
    """
    if batch_size < 1 or batches_per_group < 1:
        raise ValueError("batch_size and batches_per_group must be positive")
    lengths = np.asarray(lengths)
    if seed is None:
        order = np.argsort(-lengths, kind="stable")
        if max_tokens is None:
            return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        return cheapest_cut(order, lengths, batch_size, max_tokens)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(lengths))
    group = batch_size * max(1, min(batches_per_group, len(lengths) // (batch_size * MIN_GROUPS)))
    batches = []
    for g in range(0, len(order), group):
        members = order[g : g + group]
        members = members[_jittered_length_order(lengths[members], batch_size, rng)]
        batches.extend(members[i : i + batch_size] for i in range(0, len(members), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def _jittered_length_order(lengths: np.ndarray, batch_size: int, rng: np.random.Generator) -> np.ndarray:
    """Longest first, each item's length rank moved down by a uniform draw in [0, batch_size).

    Jittering ranks rather than lengths moves every item by about one batch whatever the length
    distribution (ties included), so batch composition changes every epoch while each batch still
    holds items of neighbouring lengths.
    """
    ranks = np.empty(len(lengths))
    ranks[np.argsort(-lengths, kind="stable")] = np.arange(len(lengths))
    return np.argsort(ranks + rng.uniform(0.0, batch_size, len(lengths)), kind="stable")


def collate(features: WindowFeatures, windows: Sequence[int]) -> Batch:
    """Pad the given windows into one batch (dynamic padding: to the longest of them)."""
    windows = np.asarray(windows, dtype=np.int64)
    token_counts = features.token_offsets[windows + 1] - features.token_offsets[windows]
    word_counts = features.word_offsets[windows + 1] - features.word_offsets[windows]
    size, max_tokens, max_words = len(windows), int(token_counts.max()), int(word_counts.max())
    input_ids = np.full((size, max_tokens), int(features.pad_id), dtype=np.int64)
    attention_mask = np.zeros((size, max_tokens), dtype=np.int64)
    word_starts = np.zeros((size, max_words), dtype=np.int64)
    labels = np.full((size, max_words), IGNORE, dtype=np.int64)
    for row, window in enumerate(windows):
        tokens, words = token_counts[row], word_counts[row]
        token_start, word_start = features.token_offsets[window], features.word_offsets[window]
        input_ids[row, :tokens] = features.input_ids[token_start : token_start + tokens]
        attention_mask[row, :tokens] = 1
        word_starts[row, :words] = features.word_starts[word_start : word_start + words]
        labels[row, :words] = features.labels[word_start : word_start + words]
    return Batch(
        input_ids=torch.from_numpy(input_ids),
        attention_mask=torch.from_numpy(attention_mask),
        word_starts=torch.from_numpy(word_starts),
        word_mask=torch.from_numpy(np.arange(max_words) < word_counts[:, None]),
        labels=torch.from_numpy(labels),
        windows=torch.from_numpy(windows),
    )


def iterate_batches(
    features: WindowFeatures, batch_size: int, *, seed: int | None, batches_per_group: int = 16, max_tokens: int | None = None
) -> Iterator[Batch]:
    """Collated, length-grouped batches of all windows (see `length_grouped_batches` for `seed` and `max_tokens`)."""
    for windows in length_grouped_batches(
        features.token_counts(), batch_size, seed=seed, batches_per_group=batches_per_group, max_tokens=max_tokens
    ):
        yield collate(features, windows)


def join_windows(
    features: WindowFeatures, windows: Sequence[int], predictions: Sequence[Sequence[int]]
) -> list[list[int]]:
    """Per-sentence label ids from per-window predictions (one list per window, over its owned words).

    `windows[i]` is the window `predictions[i]` belongs to (`Batch.windows`), in any order. Every word
    of every sentence must be predicted exactly once. MRC joins the owned words of its windows through
    it (`mrc_batching.join_windows`).
    """
    if len(windows) != len(predictions):
        raise ValueError(f"{len(windows)} windows but {len(predictions)} predictions")
    sentences = [[-1] * int(n) for n in features.sentence_lengths]
    predicted = 0
    for window, window_predictions in zip(windows, predictions):
        window = int(window)
        first, end = features.word_offsets[window], features.word_offsets[window + 1]
        if len(window_predictions) != end - first:
            raise ValueError(f"window {window} owns {end - first} words but has {len(window_predictions)} predictions")
        sentence = sentences[features.sentence[window]]
        for word, label in zip(features.word_index[first:end], window_predictions):
            sentence[word] = int(label)
        predicted += end - first
    if predicted != features.sentence_lengths.sum() or any(-1 in s for s in sentences):
        raise ValueError("predictions do not cover every word exactly once: pass every window once")
    return sentences


def ids_to_tags(sentences: Sequence[Sequence[int]], labels: Sequence[str]) -> list[list[str]]:
    return [[labels[i] for i in sentence] for sentence in sentences]
