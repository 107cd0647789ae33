"""Sentences -> sub-token windows with word-level labels, cached on disk.

Each word is labelled (and later predicted) on its first sub-token. A sentence longer than the
encoder's window is split into windows that overlap by `window_stride` sub-tokens and start and end
at word boundaries; every word is *owned* by exactly one window, the one where it has the most
context on its poorer side, so dev and test words each get exactly one prediction and training words
count once. A word whose sub-tokens alone exceed a window keeps only its first ones (its label sits
on the first, which is always kept). Words the tokenizer turns into nothing (control characters,
some emoji in uncased vocabularies) become the unknown token, so they still get a prediction.

The result is plain numpy arrays, stored flat with offsets. It is cached under
`$NERPLAT_CACHE/features` (default `~/.cache/nerplat/features`), keyed by the sentences' content
(after samplers), the tokenizer, the window settings and the label list, so a sweep tokenises each
corpus once; files are written to a temporary name and renamed, so concurrent trials never read a
half-written file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from nerplat.config.trial import Component, EncoderSettings
from nerplat.data.corpus import Corpus, Sentence
from nerplat.errors import Problem, UserInputError
from nerplat.models.encoders import quiet_transformers, tokenizer_fingerprint
from nerplat.npz_cache import entry_path, read_arrays, write_arrays
from nerplat.trial.batching import WindowFeatures

FORMAT_VERSION = 1  # bump when the arrays or the windowing change: old cache entries are then ignored


def featurize_corpus(
    corpus: Corpus, tokenizer: Any, settings: EncoderSettings, *, cache_dir: Path | None = None
) -> dict[str, WindowFeatures]:
    """Features of every split of `corpus`, with its label list (`Corpus.labels()`, O first)."""
    labels = corpus.labels()
    return {
        name: featurize(sentences, tokenizer, settings, labels, cache_dir=cache_dir)
        for name, sentences in corpus.splits().items()
    }


def featurize(
    sentences: Sequence[Sentence],
    tokenizer: Any,
    settings: EncoderSettings,
    labels: Sequence[str],
    *,
    cache_dir: Path | None = None,
) -> WindowFeatures:
    """Windows of `sentences` for `tokenizer` (a fast transformers tokenizer), from cache when possible.

    `labels` maps tags to ids (position in the list); every tag must be in it.
    """
    key = {
        "version": FORMAT_VERSION,
        "sentences": sentences_digest(sentences),
        "tokenizer": tokenizer_fingerprint(tokenizer),
        "max_length": settings.max_length,
        "window_stride": settings.window_stride,
        "labels": list(labels),
    }
    key_text = json.dumps(key, sort_keys=True)
    path = entry_path(cache_dir, "features", key_text)
    cached = read_arrays(path, key_text, [f.name for f in fields(WindowFeatures)])
    if cached is not None:
        return WindowFeatures(**cached)
    features = tokenize_sentences(sentences, tokenizer, settings, labels)
    write_arrays(path, key_text, {f.name: getattr(features, f.name) for f in fields(features)})
    return features


def featurize_windows(
    head: Component, corpus: str, sentences: Sequence[Sentence], tokenizer: Any, settings: EncoderSettings, labels: list[str]
) -> WindowFeatures:
    """The sequence-labelling variant's `Featurize` (`trial.variant`): windows of `sentences`, from cache
    when possible; every head of the variant reads the same windows, whatever the corpus."""
    return featurize(sentences, tokenizer, settings, labels)


def sentences_digest(sentences: Sequence[Sentence]) -> str:
    """sha256 of the sentences' tokens and tags, in order: identical corpora share cache entries."""
    digest = hashlib.sha256()
    for sentence in sentences:
        digest.update(json.dumps([sentence.tokens, sentence.tags], ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def plan_windows(word_lengths: Sequence[int], budget: int, stride: int) -> tuple[list[tuple[int, int]], list[int]]:
    """Cut a sentence into windows of whole words and say which window owns each word.

    Parameters
    ----------
    word_lengths : sub-tokens per word, each between 1 and `budget`.
    budget : sub-tokens a window may hold (the encoder's max_length minus its special tokens).
    stride : at most this many sub-tokens of a window are repeated at the start of the next one.

    Returns
    -------
    windows : word ranges [first, end) covering the sentence, each within `budget`.
    owner : for each word, the index of the window that owns it: among the windows that contain the
        word, the one where min(sub-tokens before it, sub-tokens after it) is largest, first on ties.
    """
    ends = np.cumsum(word_lengths)
    starts = ends - np.asarray(word_lengths)
    n = len(word_lengths)

    def span(first: int, end: int) -> int:
        return int(ends[end - 1] - starts[first])

    windows: list[tuple[int, int]] = []
    first = 0
    while n:
        end = first + 1
        while end < n and span(first, end + 1) <= budget:
            end += 1
        windows.append((first, end))
        if end == n:
            break
        # The next window repeats the last words of this one, up to `stride` sub-tokens, but always
        # moves forward and always has room for the word this one could not take.
        following = end
        while following - 1 > first and span(following - 1, end) <= stride:
            following -= 1
        while following < end and span(following, end + 1) > budget:
            following += 1
        first = following

    owner = [-1] * n
    best = [-1] * n
    for w_index, (first, end) in enumerate(windows):
        for word in range(first, end):
            context = min(int(starts[word] - starts[first]), int(ends[end - 1] - ends[word]))
            if context > best[word]:
                best[word], owner[word] = context, w_index
    return windows, owner


def tokenize_sentences(
    sentences: Sequence[Sentence], tokenizer: Any, settings: EncoderSettings, labels: Sequence[str]
) -> WindowFeatures:
    """Windows of `sentences`, uncached (`featurize` caches; predicting new text has nothing to reuse)."""
    prefix, suffix = _special_tokens(tokenizer)
    budget = settings.max_length - len(prefix) - len(suffix)
    check_stride(settings, budget, "special tokens")
    label_ids = {label: i for i, label in enumerate(labels)}
    unknown_tags = sorted({t for s in sentences for t in s.tags} - label_ids.keys())
    if unknown_tags:
        raise ValueError(f"tags {unknown_tags} are not in the label list {list(labels)}")
    if tokenizer.unk_token_id is None:
        raise ValueError("the tokenizer has no unknown token to stand for words it drops")

    encoding = tokenize_words(tokenizer, [list(s.tokens) for s in sentences])
    out: dict[str, list] = {n: [] for n in ("input_ids", "word_starts", "word_index", "labels")}
    token_offsets, word_offsets, window_sentence = [0], [0], []
    for s_index, sentence in enumerate(sentences):
        pieces = word_pieces(encoding, s_index, len(sentence.tokens), budget, tokenizer.unk_token_id)
        flat = [piece for word in pieces for piece in word]
        word_offset = np.concatenate([[0], np.cumsum([len(p) for p in pieces])])
        windows, owner = plan_windows([len(p) for p in pieces], budget, settings.window_stride)
        for w_index, (first, end) in enumerate(windows):
            owned = [word for word in range(first, end) if owner[word] == w_index]
            if not owned:
                continue
            base = word_offset[first]
            out["input_ids"].extend(prefix + flat[base : word_offset[end]] + suffix)
            out["word_starts"].extend(len(prefix) + word_offset[w] - base for w in owned)
            out["word_index"].extend(owned)
            out["labels"].extend(label_ids[sentence.tags[w]] for w in owned)
            token_offsets.append(len(out["input_ids"]))
            word_offsets.append(len(out["word_index"]))
            window_sentence.append(s_index)
    return WindowFeatures(
        input_ids=np.asarray(out["input_ids"], dtype=np.int32),
        token_offsets=np.asarray(token_offsets, dtype=np.int64),
        word_starts=np.asarray(out["word_starts"], dtype=np.int32),
        word_index=np.asarray(out["word_index"], dtype=np.int32),
        labels=np.asarray(out["labels"], dtype=np.int64),
        word_offsets=np.asarray(word_offsets, dtype=np.int64),
        sentence=np.asarray(window_sentence, dtype=np.int32),
        sentence_lengths=np.asarray([len(s) for s in sentences], dtype=np.int32),
        pad_id=np.asarray(tokenizer.pad_token_id, dtype=np.int64),
    )


def check_stride(settings: EncoderSettings, budget: int, besides: str) -> None:
    """Windows must move forward: the overlap has to be smaller than the sub-tokens a window holds."""
    if not 0 <= settings.window_stride < budget:
        raise UserInputError(
            Problem(
                f"window_stride {settings.window_stride} must be smaller than the {budget} sub-tokens a "
                f"window of max_length {settings.max_length} holds besides {besides}",
                path="encoder.window_stride",
            )
        )


def word_pieces(encoding: Any, index: int, words: int, budget: int, unknown_id: int) -> list[list[int]]:
    """Sub-token ids of each word of sentence `index` of `encoding`: at most `budget` per word, and the
    unknown token for a word the tokenizer drops (see the module docstring)."""
    pieces: list[list[int]] = [[] for _ in range(words)]
    for piece, word in zip(encoding["input_ids"][index], encoding.word_ids(index)):
        if word is not None and len(pieces[word]) < budget:
            pieces[word].append(piece)
    return [p or [unknown_id] for p in pieces]


def tokenize_words(tokenizer: Any, words: list[list[str]]) -> Any:
    """Sub-tokens without special tokens or truncation (windows are cut afterwards)."""
    with quiet_transformers():  # "sequence longer than the model's maximum" is what windows fix
        return tokenizer(words, is_split_into_words=True, add_special_tokens=False, truncation=False)


def _special_tokens(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a sequence ([CLS] and [SEP] for BERT)."""
    encoding = tokenizer([["x"]], is_split_into_words=True, add_special_tokens=True)
    ids, word_ids = encoding["input_ids"][0], encoding.word_ids(0)
    first = word_ids.index(0)
    last = len(word_ids) - 1 - word_ids[::-1].index(0)
    return ids[:first], ids[last + 1 :]
