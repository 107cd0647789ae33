"""Rows in, records out: what `nerplat predict`, `nerplat serve` and the MLflow pyfunc model exchange.

A row (`nerplat.serving.rows`) is `{"text": "a sentence"}` (split into words by
`nerplat.serving.words`) or `{"tokens": ["its", "words"]}`. A record holds the words, their tags,
per-word scores where the head has them (`nerplat.serving.confidence`, rounded to `SCORE_DIGITS`)
and the spans, with word offsets and, for text, character offsets and the text they cover.
"""

from __future__ import annotations

from typing import Any, Callable

from nerplat.serving.predictor import tag_sentences
from nerplat.serving.rows import row_problem
from nerplat.serving.words import split_words

BATCH_SIZE = 32
SCORE_DIGITS = 4  # a confidence to 1e-4 is what a reader or a threshold uses; 17 digits are float noise
ROWS_PER_CHUNK = 256  # rows split, tokenised and tagged together


def predict_records(
    bundle: Any,
    rows: list[dict[str, Any]],
    splitter: str = "encoder",
    batch_size: int = BATCH_SIZE,
    stop: Callable[[], bool] | None = None,
    span_rule: str = "strict",
) -> list[dict[str, Any]]:
    """Tag rows that hold `text` (split into words by `splitter`) or `tokens`; one record per row, in order.
    Spans are read from the tags by `span_rule` (`data.tags.SPAN_RULES`: strict IOB2, as scored).

    `stop` is asked between batches; when it answers True, `TaggingStopped` is raised (a client gave
    up). Rows are split and tokenised `ROWS_PER_CHUNK` at a time, so that stop comes soon too.
    """
    for index, row in enumerate(rows):
        problem = row_problem(row)
        if problem is not None:
            raise ValueError(f"input row {index}: {problem}")
    records: list[dict[str, Any]] = []
    for first in range(0, len(rows), ROWS_PER_CHUNK):
        chunk = rows[first : first + ROWS_PER_CHUNK]
        records += _tagged_records(bundle, chunk, splitter, batch_size, stop, span_rule)
    return records


def _tagged_records(
    bundle: Any,
    rows: list[dict[str, Any]],
    splitter: str,
    batch_size: int,
    stop: Callable[[], bool] | None,
    span_rule: str,
) -> list[dict[str, Any]]:
    words, sources = [], []
    for row in rows:
        if row.get("text") is not None:
            split = split_words(row["text"], bundle.tokenizer, splitter)
            words.append([w for w, _ in split])
            sources.append((row["text"], [o for _, o in split]))
        else:
            words.append(list(row["tokens"]))
            sources.append(None)
    tagged = tag_sentences(bundle, words, batch_size, stop, span_rule)
    return [_record(sentence, source) for sentence, source in zip(tagged, sources)]


def _record(sentence: Any, source: tuple[str, list[tuple[int, int]]] | None) -> dict[str, Any]:
    """Spans with word offsets; for text input also character offsets and the text they cover."""
    spans = []
    for span in sentence.spans:
        entry = {"type": span.type, "start": span.start, "end": span.end, "text": " ".join(sentence.words[span.start : span.end])}
        if source is not None:
            text, offsets = source
            start, end = offsets[span.start][0], offsets[span.end - 1][1]
            entry |= {"start_char": start, "end_char": end, "text": text[start:end]}
        if span.score is not None:
            entry["score"] = round(span.score, SCORE_DIGITS)
        spans.append(entry)
    record = {"words": sentence.words, "tags": sentence.tags, "spans": spans}
    if sentence.scores is not None:
        record["scores"] = [round(score, SCORE_DIGITS) for score in sentence.scores]
    return record
