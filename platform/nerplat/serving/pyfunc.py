"""The tagger as an MLflow pyfunc model: what `mlflow.pyfunc.load_model` and `mlflow models serve` run.

Input: a DataFrame (or JSON records) with a `text` column (a sentence, split into words by the
encoder's pre-tokenizer, `nerplat.serving.words`) or a `tokens` column (a list of words). Output:
one record per row (`nerplat.serving.records`). `nerplat predict` and `nerplat serve` read the
bundle folder directly and do not go through this class; it is what `mlflow.pyfunc.load_model` and
`mlflow models serve` run elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mlflow.pyfunc

from nerplat.serving.bundle import MLFLOW_ARTIFACT, load_bundle
from nerplat.serving.records import predict_records

EXAMPLE_SENTENCE = "EU rejects German call to boycott British lamb ."


class TaggerModel(mlflow.pyfunc.PythonModel):
    """Loads the bundle once per process; `predict` tags every row of the input."""

    def load_context(self, context: Any) -> None:
        self.bundle = load_bundle(Path(context.artifacts[MLFLOW_ARTIFACT]))

    # No type hints: MLflow would read them as a second, conflicting signature.
    def predict(self, context, model_input, params=None):
        return predict_records(self.bundle, _rows(model_input))


def input_example() -> Any:
    """The example logged with the model (and shown by `mlflow models serve`'s docs page)."""
    import pandas as pd

    return pd.DataFrame({"text": [EXAMPLE_SENTENCE]})


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
