"""Tag new sentences with a saved tagger, exactly as a trial evaluates: same windows, same decoding.

Sentences are windowed by `trial.features` (long ones overlap, each word owned by one window),
batched by `trial.batching` (bounded in padded sub-tokens as a CPU trial's evaluation is, since a
bundle loads to the CPU: `trial.predict.CPU_EVAL_BATCH_TOKENS`), decoded by the head's own `decode`
(argmax, Viterbi, Algorithm 1 with the saved thresholds) and joined back per sentence by
`join_windows`. Spans are read from the tags as `nerplat evaluate` and the reports score them:
strict IOB2 (`B-X (I-X)*`; an I-X after O or after another type is in no span). `lenient`, on
request, reads them the conlleval way, as seqeval's `get_entities` and Hugging Face's pipeline do:
such an I-X starts a span.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from nerplat.data.corpus import Sentence
from nerplat.data.tags import SPAN_RULES
from nerplat.serving.bundle import TaggerBundle
from nerplat.serving.confidence import word_confidences
from nerplat.trial.batching import iterate_batches, join_windows
from nerplat.trial.features import tokenize_sentences
from nerplat.trial.predict import CPU_EVAL_BATCH_TOKENS


@dataclass(frozen=True)
class Span:
    type: str
    start: int  # first word
    end: int  # one past the last word
    score: float | None  # mean confidence of its words (None for CRF heads)


@dataclass(frozen=True)
class TaggedSentence:
    words: list[str]
    tags: list[str]
    scores: list[float] | None  # per word, None for CRF heads
    spans: list[Span]


class TaggingStopped(Exception):
    """`tag_sentences` was asked to stop (its client gave up or ran out of time)."""


def tag_sentences(
    bundle: TaggerBundle,
    sentences: Sequence[Sequence[str]],
    batch_size: int = 32,
    stop: Callable[[], bool] | None = None,
    span_rule: str = "strict",
) -> list[TaggedSentence]:
    """Tags, word confidences and spans (read by `span_rule`, a key of `data.tags.SPAN_RULES`) of every
    sentence (lists of words; empty ones allowed).

    `stop`, when given, is asked before each batch; True raises `TaggingStopped`, so a served
    request whose client is gone stops within one batch instead of running to the end.
    """
    outside = bundle.labels.index("O")
    blank = [Sentence(tuple(words), ("O",) * len(words)) for words in sentences]
    features = tokenize_sentences(blank, bundle.tokenizer, bundle.encoder, bundle.labels)
    windows: list[int] = []
    decoded: list[list[int]] = []
    confidences: list[float] = []
    confidence_refs: list[list[int]] = []  # per window, indices into `confidences`
    has_confidence = True
    with torch.inference_mode():
        for batch in iterate_batches(features, batch_size, seed=None, max_tokens=CPU_EVAL_BATCH_TOKENS):
            if stop is not None and stop():
                raise TaggingStopped
            output = bundle.tagger(batch)
            labels = bundle.tagger.decode(output)
            window_confidences = word_confidences(bundle.head.name, output, labels, outside)
            has_confidence = window_confidences is not None
            for row in window_confidences or [[0.0] * len(ids) for ids in labels]:
                confidence_refs.append(list(range(len(confidences), len(confidences) + len(row))))
                confidences += row
            decoded += labels
            windows += batch.windows.tolist()
    ids = join_windows(features, windows, decoded)
    # Confidences ride through the same join as label ids, by their index.
    sentence_confidences = [[confidences[i] for i in row] for row in join_windows(features, windows, confidence_refs)]
    tagged = []
    for words, sentence_ids, scores in zip(sentences, ids, sentence_confidences):
        tags = [bundle.labels[i] for i in sentence_ids]
        kept = scores if has_confidence else None
        tagged.append(TaggedSentence(list(words), tags, kept, spans_of(tags, kept, span_rule)))
    return tagged


def spans_of(tags: Sequence[str], scores: Sequence[float] | None, span_rule: str = "strict") -> list[Span]:
    """Entity spans of one sentence's BIO tags by `span_rule` (without importing seqeval and
    scikit-learn: seconds of a one-sentence `predict`)."""
    spans = []
    for entity_type, first, end in SPAN_RULES[span_rule](tags):
        score = None if scores is None else float(sum(scores[first:end]) / (end - first))
        spans.append(Span(entity_type, first, end, score))
    return spans
