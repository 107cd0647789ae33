"""Scoring finished replicates again from their logged predictions, so a metric added after a run
(a new key of `nerplat.metrics.evaluate_tags`) reaches its runs without training them again.

Only keys a run lacks are logged: a rescore never changes a number a report was made from, and
running it twice adds nothing the second time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from nerplat.metrics import evaluate_tags
from nerplat.track import schema
from nerplat.track.logged_predictions import add_metrics, replicate_predictions

if TYPE_CHECKING:
    from nerplat.track.experiment_reader import MlflowClient


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
    rescored = complete = not_completed = 0
    without: list[str] = []
    added: set[str] = set()
    for run in replicate_predictions(client, experiment):
        if run.status != "completed":
            not_completed += 1
            continue
        if run.tags is None:
            without.append(run.run_id)
            continue
        scores = {schema.metric_key(run.split, name): value for name, value in evaluate_tags(*run.tags).items()}
        new = {key: value for key, value in scores.items() if key not in run.metrics}
        if not new:
            complete += 1
            continue
        add_metrics(client, run.run_id, new)
        rescored += 1
        added.update(new)
    return Rescored(rescored, complete, tuple(without), not_completed, tuple(sorted(added)))
