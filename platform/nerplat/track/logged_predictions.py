"""The test predictions finished replicates logged (`predictions.conll`), read back with the keys
of the metrics they already have, and metrics added to such a run afterwards: what `nerplat
rescore` needs from MLflow (the scoring itself is `analysis/rescoring.py`)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nerplat.track import schema
from nerplat.track.experiment_reader import find_experiment, search_all
from nerplat.track.predictions import read_conll_predictions

if TYPE_CHECKING:
    from mlflow import MlflowClient

Sentences = list[list[str]]


@dataclass(frozen=True)
class LoggedPredictions:
    """One replicate run: its id, status, the split it scored, the metric keys it has, and its
    predictions as (gold, pred) sentences, None when it logged none."""

    run_id: str
    status: str | None
    split: str
    metrics: frozenset[str]
    tags: tuple[Sentences, Sentences] | None


def replicate_predictions(client: MlflowClient, experiment: str) -> Iterator[LoggedPredictions]:
    """Every replicate run of `experiment`; the predictions are read only for completed ones."""
    from mlflow.exceptions import MlflowException

    for run in search_all(client, find_experiment(client, experiment).experiment_id, "replicate"):
        status = run.data.tags.get(schema.STATUS)
        tags = None
        if status == "completed":
            with tempfile.TemporaryDirectory(prefix="nerplat-rescore-") as folder:
                try:
                    path = client.download_artifacts(run.info.run_id, schema.PREDICTIONS_ARTIFACT, folder)
                except (MlflowException, OSError):
                    path = None
                if path is not None:
                    _, gold, pred = read_conll_predictions(Path(path))
                    tags = (gold, pred)
        split = run.data.params.get("eval_split") or "test"
        yield LoggedPredictions(run.info.run_id, status, split, frozenset(run.data.metrics), tags)


def add_metrics(client: MlflowClient, run_id: str, metrics: dict[str, float]) -> None:
    """Logs `metrics` on a finished run (step 0, as a replicate's final scores)."""
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    client.log_batch(run_id, metrics=[Metric(key, float(value), now, 0) for key, value in sorted(metrics.items())])
