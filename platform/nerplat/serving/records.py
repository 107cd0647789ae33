"""Rows in, records out: what `nerplat predict`, `nerplat serve` and the MLflow pyfunc model exchange.

A row is `{"text": "a sentence"}` (split into words by `nerplat.serving.words`) or
`{"tokens": ["its", "words"]}`. A record holds the words, their tags, per-word scores where the head
has them (`nerplat.serving.confidence`) and the spans, with word offsets and, for text, character
offsets and the text they cover.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from nerplat.serving.predictor import tag_sentences
from nerplat.serving.words import split_words

BATCH_SIZE = 32
ROWS_PER_CHUNK = 256  # rows split, tokenised and tagged together
ROW_SCHEMA = '{"text": "a sentence"} or {"tokens": ["a", "list", "of", "words"]}'
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # JSON's "\ud800" decodes to one; no UTF-8 can carry it


def row_problem(row: Any) -> str | None:
    """What is wrong with one input row (None when it is one of `ROW_SCHEMA`); keys set to null count as absent."""
    if not isinstance(row, dict):
        return f"expected an object {ROW_SCHEMA}, not {type(row).__name__}"
    given = {key for key, value in row.items() if value is not None}
    unknown = sorted(given - {"text", "tokens"})
    if unknown:
        return f"unknown field {', '.join(repr(k) for k in unknown)}: a row is {ROW_SCHEMA}"
    if given == {"text", "tokens"}:
        return f"both 'text' and 'tokens': a row is {ROW_SCHEMA}"
    if not given:
        return f"no 'text' and no 'tokens': a row is {ROW_SCHEMA}"
    if "text" in given and not isinstance(row["text"], str):
        return f"'text' must be a string, not {type(row['text']).__name__}"
    tokens = row.get("tokens")
    if "tokens" in given and not (isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
        return "'tokens' must be a list of strings"
    for field, strings in (("text", [row.get("text") or ""]), ("tokens", tokens or [])):
        for string in strings:
            if (found := _LONE_SURROGATE.search(string)) is not None:
                return (
                    f"'{field}' holds a lone surrogate (U+{ord(found.group()):04X} at character {found.start()}), which is not text: "
                    "escape a character beyond U+FFFF as a surrogate pair, or send it as UTF-8"
                )
    return None


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


def _tagged_records(bundle: Any, rows: list[dict[str, Any]], splitter: str, batch_size: int, stop: Callable[[], bool] | None) -> list[dict[str, Any]]:
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
