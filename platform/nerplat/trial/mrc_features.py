"""Sentences -> MRC examples (Li et al. 2020): windows of whole words, one query per entity type.

The windows are those of sequence labelling (`features.plan_windows`: whole words, overlapping by
`window_stride`, each word owned by one window), cut so that the longest query still fits:
``[CLS] query [SEP] context [SEP]`` stays within `max_length`. Unlike `WindowFeatures`, every word of
a window is kept, owned or not, because a span must be seen whole where it is decoded; only owned
words are joined back into sentences. An example is one (window, query) pair: a window with K types
gives K examples, built at collation (`mrc_batching`), so the features hold each context once.

Per word and type the target is the window position of the end of the gold span of that type that
starts at the word, or -1 (`data.mrc.window_span_ends`): start, end and span-match labels all follow.
Conversion runs per trial without a disk cache: it costs one tokenizer pass (seconds on CoNLL-2003).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from nerplat.data.corpus import Sentence
from nerplat.data.mrc_examples import entity_types, queries_for, window_span_ends
from nerplat.errors import Problem, UserInputError
from nerplat.config.trial import Component, EncoderSettings
from nerplat.trial.features import check_stride, plan_windows, tokenize_words, word_pieces
from nerplat.trial.mrc_batching import MRCFeatures, PairLayout


def pair_layout(tokenizer: Any) -> PairLayout:
    """Read the special tokens and segments of a pair off the tokenizer's own encoding of ("x", "x")."""
    encoding = tokenizer("x", "x", return_token_type_ids=True)
    ids, sequences = encoding["input_ids"], encoding.sequence_ids(0)
    query, context = sequences.index(0), sequences.index(1)
    segments = encoding["token_type_ids"]
    return PairLayout(
        prefix=tuple(ids[:query]),
        middle=tuple(ids[query + 1 : context]),
        suffix=tuple(ids[context + 1 :]),
        query_segment=segments[query],
        context_segment=segments[context],
    )


def featurize_mrc(
    sentences: Sequence[Sentence],
    tokenizer: Any,
    settings: EncoderSettings,
    labels: Sequence[str],
    queries: Sequence[str],
) -> MRCFeatures:
    """MRC features of `sentences`; `queries` gives one query per type of `labels`, in label order."""
    types = entity_types(labels)
    if not types or len(queries) != len(types):
        raise ValueError(f"need one query per entity type {types}, got {len(queries)}")
    layout = pair_layout(tokenizer)
    query_ids = tuple(tuple(tokenizer(q, add_special_tokens=False)["input_ids"]) for q in queries)
    longest = max(range(len(types)), key=lambda k: len(query_ids[k]))
    budget = settings.max_length - layout.specials - len(query_ids[longest])
    if budget < 1:
        raise UserInputError(
            Problem(
                f"the MRC query of {types[longest]} has {len(query_ids[longest])} sub-tokens, which leaves no room "
                f"for context within max_length {settings.max_length}: raise max_length or shorten the query",
                path="model.max_length",
            )
        )
    check_stride(settings, budget, "special tokens and the longest MRC query")
    label_ids = {label: i for i, label in enumerate(labels)}
    encoding = tokenize_words(tokenizer, [list(s.tokens) for s in sentences])
    out: dict[str, list] = {n: [] for n in ("context_ids", "word_starts", "span_ends", "tags", "owned", "word_index")}
    token_offsets, word_offsets, window_sentence = [0], [0], []
    for s_index, sentence in enumerate(sentences):
        pieces = word_pieces(encoding, s_index, len(sentence.tokens), budget, tokenizer.unk_token_id)
        word_offset = np.concatenate([[0], np.cumsum([len(p) for p in pieces])])
        windows, owner = plan_windows([len(p) for p in pieces], budget, settings.window_stride)
        for w_index, (first, end) in enumerate(windows):
            if w_index not in owner[first:end]:
                continue
            out["context_ids"].extend(piece for word in pieces[first:end] for piece in word)
            out["word_starts"].extend(word_offset[first:end] - word_offset[first])
            out["span_ends"].extend(window_span_ends(sentence.tags, first, end, types))
            out["tags"].extend(label_ids[tag] for tag in sentence.tags[first:end])
            out["owned"].extend(owner[w] == w_index for w in range(first, end))
            out["word_index"].extend(range(first, end))
            token_offsets.append(len(out["context_ids"]))
            word_offsets.append(len(out["word_index"]))
            window_sentence.append(s_index)
    return MRCFeatures(
        context_ids=np.asarray(out["context_ids"], dtype=np.int32),
        token_offsets=np.asarray(token_offsets, dtype=np.int64),
        word_starts=np.asarray(out["word_starts"], dtype=np.int32),
        span_ends=np.asarray(out["span_ends"], dtype=np.int32).reshape(-1, len(types)),
        tags=np.asarray(out["tags"], dtype=np.int64),
        owned=np.asarray(out["owned"], dtype=bool),
        word_index=np.asarray(out["word_index"], dtype=np.int32),
        word_offsets=np.asarray(word_offsets, dtype=np.int64),
        sentence=np.asarray(window_sentence, dtype=np.int32),
        sentence_lengths=np.asarray([len(s) for s in sentences], dtype=np.int32),
        queries=query_ids,
        types=tuple(types),
        layout=layout,
        pad_id=int(tokenizer.pad_token_id),
    )


def featurize_mrc_examples(
    head: Component, corpus: str, sentences: Sequence[Sentence], tokenizer: Any, settings: EncoderSettings, labels: list[str]
) -> MRCFeatures:
    """The MRC variant's `Featurize`: the head's `queries` parameter, else the corpus name, chooses the
    queries (`nerplat.data.mrc_examples.queries_for`)."""
    queries = queries_for(entity_types(labels), corpus, head.params.get("queries"))
    return featurize_mrc(sentences, tokenizer, settings, labels, queries)
