"""Reading runs back from MLflow: the client, an experiment, the nerplat experiments `nerplat ui` shows,
its runs of a kind, the summary run, the plan it logged, the per-epoch history of a metric, and the
completed runs of an encoder in every experiment of the store.

What the analysis, the cost model and the benchmarks read goes through here; turning runs into
frames is the analysis's (`analysis/run_frames.py`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from nerplat.errors import Problem, UserInputError
from nerplat.suggest import closest
from nerplat.track import schema

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Experiment, Run

PAGE_SIZE = 5000  # runs per search_runs page; the SQLite store accepts up to 50,000


def open_client(tracking_uri: str) -> MlflowClient:
    from mlflow import MlflowClient

    # reading plan.json would otherwise draw a download progress bar on the terminal
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

    return MlflowClient(tracking_uri=tracking_uri)


def find_experiment(client: MlflowClient, name: str) -> Experiment:
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        known = sorted(e.name for e in client.search_experiments(max_results=200))
        hint = f"; experiments there: {', '.join(known)}" if known else "; the store has no experiments"
        raise UserInputError(
            Problem(f"no MLflow experiment named '{name}' at {client.tracking_uri}{hint}", path="EXPERIMENT")
        )
    return experiment


def experiments_to_show(client: MlflowClient, name: str | None) -> list[tuple[str, str]]:
    """(name, id) of the experiment called `name`, or of every nerplat experiment in the store."""
    if name is not None:
        experiment = client.get_experiment_by_name(name)
        if experiment is None or experiment.lifecycle_stage != "active":
            known = [e.name for e in client.search_experiments()]
            close = closest(name, known)
            hint = f"; did you mean {close!r}?" if close is not None else f"; it has {sorted(known)}"
            raise UserInputError(f"no experiment {name!r} in {client.tracking_uri}{hint}")
        return [(experiment.name, experiment.experiment_id)]
    found = [(e.name, e.experiment_id) for e in client.search_experiments() if schema.EXPERIMENT in e.tags]
    return sorted(found)


def search_all(client: MlflowClient, experiment_id: str, kind: str) -> list[Run]:
    """Every run of one `nerplat.kind` in the experiment, following page tokens."""
    found: list[Run] = []
    token = None
    while True:
        page = client.search_runs(
            [experiment_id],
            filter_string=f"tags.`{schema.KIND}` = '{kind}'",
            max_results=PAGE_SIZE,
            page_token=token,
        )
        found.extend(page)
        token = page.token
        if not token:
            return found


def completed_runs_of_encoders(client: MlflowClient, encoders: Iterable[str]) -> list[Run]:
    """Every completed run (`nerplat.status` = completed) of each of `encoders`, in any of the store's
    first 1000 experiments, following page tokens: what the cost model times (`estimate/cost.py`)."""
    experiments = [experiment.experiment_id for experiment in client.search_experiments(max_results=1000)]
    found: list[Run] = []
    for encoder in sorted(set(encoders)):
        quoted = encoder.replace("'", "\\'")
        token = None
        while experiments:
            page = client.search_runs(
                experiments, filter_string=f"tags.`{schema.ENCODER}` = '{quoted}' and tags.`{schema.STATUS}` = 'completed'",
                max_results=1000, page_token=token,
            )  # fmt: skip
            found.extend(page)
            token = page.token
            if not token:
                break
    return found


def find_summary_run(client: MlflowClient, experiment_id: str) -> Run | None:
    runs = search_all(client, experiment_id, "summary")
    if len(runs) > 1:
        ids = ", ".join(r.info.run_id for r in runs)
        raise UserInputError(
            Problem(f"experiment has {len(runs)} runs tagged {schema.KIND}=summary ({ids}); expected one")
        )
    return runs[0] if runs else None


def read_plan(client: MlflowClient, run: Run) -> dict | None:
    """The compiled plan logged as `plan.json` on the summary run, or None when it was not logged."""
    if not any(a.path == schema.PLAN_ARTIFACT for a in client.list_artifacts(run.info.run_id)):
        return None
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(client.download_artifacts(run.info.run_id, schema.PLAN_ARTIFACT, scratch))
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise UserInputError(
                Problem(f"plan.json is not JSON: {error.msg}", source=f"run {run.info.run_id}/plan.json", line=error.lineno)
            ) from None


def latest_steps(client: MlflowClient, runs: Iterable[Run], metrics: Iterable[str]) -> dict[tuple[str, str, int], float]:
    """(run id, metric, step) -> value of each logged step of `metrics`; a step logged twice (a worker
    retried from its checkpoint) keeps its latest value."""
    metrics = tuple(metrics)
    rows: dict[tuple[str, str, int], tuple[int, float]] = {}
    for run in runs:
        for metric in (m for m in metrics if m in run.data.metrics):
            for point in client.get_metric_history(run.info.run_id, metric):
                key = (run.info.run_id, metric, int(point.step))
                if key not in rows or point.timestamp >= rows[key][0]:
                    rows[key] = (point.timestamp, point.value)
    return {key: value for key, (_, value) in rows.items()}
