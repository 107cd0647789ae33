"""Scoring finished replicates again from their logged predictions, so a metric added after a run
(a new key of `nerplat.metrics.evaluate_tags`) reaches its runs without training them again.

Only keys a run lacks are logged: a rescore never changes a number a report was made from, and
running it twice adds nothing the second time.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nerplat.metrics import evaluate_tags
from nerplat.track import schema
from nerplat.track.experiment_reader import find_experiment, search_all
from nerplat.track.predictions import read_conll_predictions

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Run


@dataclass(frozen=True)
class Rescored:
    """What a rescore did: runs given new keys, runs already complete, runs it could not score."""

    rescored: int
    complete: int
    without_predictions: tuple[str, ...]
    not_completed: int
    added: tuple[str, ...]

    def line(self) -> str:
        added = f" ({', '.join(self.added)})" if self.added else ""
        missing = f"; {len(self.without_predictions)} without {schema.PREDICTIONS_ARTIFACT}" if self.without_predictions else ""
        return (f"rescored {self.rescored} replicate runs{added}; {self.complete} had every key{missing}; "
                f"{self.not_completed} not completed, left alone")


def rescore_replicates(client: MlflowClient, experiment: str) -> Rescored:
    """Adds to every completed replicate run of `experiment` the metrics of its predictions it lacks."""
    runs = search_all(client, find_experiment(client, experiment).experiment_id, "replicate")
    rescored = complete = not_completed = 0
    without: list[str] = []
    added: set[str] = set()
    for run in runs:
        if run.data.tags.get(schema.STATUS) != "completed":
            not_completed += 1
            continue
        scores = _scores(client, run)
        if scores is None:
            without.append(run.info.run_id)
            continue
        new = {key: value for key, value in scores.items() if key not in run.data.metrics}
        if not new:
            complete += 1
            continue
        _log(client, run.info.run_id, new)
        rescored += 1
        added.update(new)
    return Rescored(rescored, complete, tuple(without), not_completed, tuple(sorted(added)))


def _scores(client: MlflowClient, run: Run) -> dict[str, float] | None:
    """The run's predictions scored now, keyed as its split's metrics; None without predictions."""
    from mlflow.exceptions import MlflowException

    split = run.data.params.get("eval_split") or "test"
    with tempfile.TemporaryDirectory(prefix="nerplat-rescore-") as folder:
        try:
            path = client.download_artifacts(run.info.run_id, schema.PREDICTIONS_ARTIFACT, folder)
        except (MlflowException, OSError):
            return None
        _, gold, pred = read_conll_predictions(Path(path))
    return {schema.metric_key(split, name): value for name, value in evaluate_tags(gold, pred).items()}


def _log(client: MlflowClient, run_id: str, metrics: dict[str, float]) -> None:
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    client.log_batch(run_id, metrics=[Metric(key, float(value), now, 0) for key, value in sorted(metrics.items())])
