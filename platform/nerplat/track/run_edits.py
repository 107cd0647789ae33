"""Edits of runs that already exist, and searches of the experiment's runs: what the driver's ledger
(`run/ledger.py`) and runner change and read back besides creating, logging and ending runs.

`ExperimentTracker.edits` (track/experiment_tracker.py) hands out a `RunEdits` on its client and experiment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nerplat.track import schema
from nerplat.track.experiment_reader import search_all

SEARCH_LIMIT = 50_000  # runs in one search: the most the SQLite store returns at once


@dataclass(frozen=True)
class RunEdits:
    """Searches and edits of the runs of one MLflow experiment, through one client."""

    client: Any  # an MlflowClient (or the tracker's PatientClient around one)
    experiment_id: str

    # -- searches ---------------------------------------------------------------------------

    def has_runs(self) -> bool:
        """Whether the experiment has a run that is not deleted."""
        return bool(self.client.search_runs([self.experiment_id], max_results=1))

    def runs_of_kind(self, kind: str) -> list[Any]:
        """Every run of one `nerplat.kind` (`trial`, `replicate`, `arm`, `summary`) in the experiment."""
        return search_all(self.client, self.experiment_id, kind)

    def child_runs(self, parent_run_id: str) -> list[Any]:
        """The runs under `parent_run_id` (its trials or replicates), leaving out deleted ones."""
        return self._active_runs(f"tags.`{schema.PARENT_RUN}` = '{parent_run_id}'")

    def arm_runs(self, arm: str) -> list[Any]:
        """Every run of arm `arm` (its parents, trials and replicates), leaving out deleted ones."""
        return self._active_runs(f"tags.`{schema.ARM}` = '{arm}'")

    def _active_runs(self, filter_string: str) -> list[Any]:
        from mlflow.entities import ViewType

        return self.client.search_runs(
            [self.experiment_id], filter_string=filter_string, run_view_type=ViewType.ACTIVE_ONLY, max_results=SEARCH_LIMIT
        )

    # -- edits ------------------------------------------------------------------------------

    def add_params(self, run_id: str, params: Mapping[str, str]) -> None:
        """Those of `params` the run does not have yet, in one batch (MLflow refuses to change a param)."""
        from mlflow.entities import Param

        existing = self.client.get_run(run_id).data.params
        new = [Param(key, text) for key, text in params.items() if key not in existing]
        if new:
            self.client.log_batch(run_id, params=new)

    def set_tags(self, run_id: str, tags: Mapping[str, str]) -> None:
        """`tags` on the run in one batch."""
        from mlflow.entities import RunTag

        self.client.log_batch(run_id, tags=[RunTag(tag, value) for tag, value in tags.items()])

    def mark_best_trial(self, tune_run_id: str, trial_run_id: str) -> None:
        """The `nerplat.best_trial` tag on the chosen trial's run and on no other run under the tune
        run (an earlier session may have tagged another of tied trials)."""
        for run in self.child_runs(tune_run_id):
            if run.data.tags.get(schema.BEST_TRIAL) and run.info.run_id != trial_run_id:
                self.client.delete_tag(run.info.run_id, schema.BEST_TRIAL)
        self.client.set_tag(trial_run_id, schema.BEST_TRIAL, "true")

    def delete_run(self, run_id: str) -> None:
        """Deletes the run (to MLflow's trash: `mlflow gc` removes it for good); searches no longer find it."""
        self.client.delete_run(run_id)
