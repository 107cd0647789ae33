"""The tagger as an MLflow pyfunc model: what `mlflow.pyfunc.load_model` and `mlflow models serve` run.

Input: a DataFrame (or JSON records) with a `text` column (a sentence, split into words by the
encoder's pre-tokenizer, `nerplat.serving.words`) or a `tokens` column (a list of words). Output:
one record per row with the words, their tags, per-word scores (where the head has them) and the spans; spans carry word and, for text, character
offsets, and a score where the head has one (`nerplat.serving.confidence`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mlflow.pyfunc

from nerplat.serving.words import split_words

ARTIFACT = "tagger"  # the artifact key of the bundle folder (`nerplat.serving.bundle`)
BATCH_SIZE = 32
EXAMPLE_SENTENCE = "EU rejects German call to boycott British lamb ."


class TaggerModel(mlflow.pyfunc.PythonModel):
    """Loads the bundle once per process; `predict` tags every row of the input."""

    def load_context(self, context: Any) -> None:
        from nerplat.serving.bundle import load_bundle

        self.bundle = load_bundle(Path(context.artifacts[ARTIFACT]))

    # No type hints: MLflow would read them as a second, conflicting signature.
    def predict(self, context, model_input, params=None):
        return predict_records(self.bundle, _rows(model_input))


def input_example() -> Any:
    """The example logged with the model (and shown by `mlflow models serve`'s docs page)."""
    import pandas as pd

    return pd.DataFrame({"text": [EXAMPLE_SENTENCE]})


def predict_records(
    bundle: Any, rows: list[dict[str, Any]], splitter: str = "encoder", batch_size: int = BATCH_SIZE
) -> list[dict[str, Any]]:
    """Tag rows that hold `text` (split into words by `splitter`) or `tokens`; one record per row, in order."""
    from nerplat.serving.predictor import tag_sentences

    words, sources = [], []
    for index, row in enumerate(rows):
        text, tokens = row.get("text"), row.get("tokens")
        if isinstance(text, str):
            split = split_words(text, bundle.tokenizer, splitter)
            words.append([w for w, _ in split])
            sources.append((text, [o for _, o in split]))
        elif tokens is not None and not isinstance(tokens, str):
            words.append([str(t) for t in tokens])
            sources.append(None)
        else:
            raise ValueError(f"input row {index} has neither a 'text' string nor a 'tokens' list")
    tagged = tag_sentences(bundle, words, batch_size)
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


def _rows(model_input: Any) -> list[dict[str, Any]]:
    """Records from what MLflow hands `predict`: a DataFrame (JSON `dataframe_records`), a dict or a list."""
    if hasattr(model_input, "to_dict"):
        return [{k: _plain(v) for k, v in row.items()} for row in model_input.to_dict(orient="records")]
    if isinstance(model_input, dict):
        return [dict(zip(model_input, values)) for values in zip(*model_input.values())]
    return [row if isinstance(row, dict) else {"text": row} for row in model_input]


def _plain(value: Any) -> Any:
    """numpy arrays (list cells of a DataFrame) as lists; missing cells (NaN, None) as None."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, float) and value != value:
        return None
    return value
