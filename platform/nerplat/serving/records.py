"""Rows in, records out: what `nerplat predict`, `nerplat serve` and the MLflow pyfunc model exchange.

A row (`nerplat.serving.rows`) is `{"text": "a sentence"}` (split into words by
`nerplat.serving.words`) or `{"tokens": ["its", "words"]}`. A record holds the words, their tags,
per-word scores where the head has them (`nerplat.serving.confidence`) and the spans, with word
offsets and, for text, character offsets and the text they cover.
"""

from __future__ import annotations

from typing import Any, Callable

from nerplat.serving.predictor import tag_sentences
from nerplat.serving.rows import row_problem
from nerplat.serving.words import split_words

BATCH_SIZE = 32
ROWS_PER_CHUNK = 256  # rows split, tokenised and tagged together


def predict_records(
    bundle: Any,
    rows: list[dict[str, Any]],
    splitter: str = "encoder",
    batch_size: int = BATCH_SIZE,
    stop: Callable[[], bool] | None = None,
) -> list[dict[str, Any]]:
    """Tag rows that hold `text` (split into words by `splitter`) or `tokens`; one record per row, in order.

    `stop` is asked between batches; when it answers True, `TaggingStopped` is raised (a client gave
    up). Rows are split and tokenised `ROWS_PER_CHUNK` at a time, so that stop comes soon too.
    """
    for index, row in enumerate(rows):
        problem = row_problem(row)
        if problem is not None:
            raise ValueError(f"input row {index}: {problem}")
    records: list[dict[str, Any]] = []
    for first in range(0, len(rows), ROWS_PER_CHUNK):
        records += _tagged_records(bundle, rows[first : first + ROWS_PER_CHUNK], splitter, batch_size, stop)
    return records


def _tagged_records(
    bundle: Any, rows: list[dict[str, Any]], splitter: str, batch_size: int, stop: Callable[[], bool] | None
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
    tagged = tag_sentences(bundle, words, batch_size, stop)
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
            entry["score"] = span.score
        spans.append(entry)
    record = {"words": sentence.words, "tags": sentence.tags, "spans": spans}
    if sentence.scores is not None:
        record["scores"] = sentence.scores
    return record
