"""The analysis report on the experiment's summary run: the run itself when the runner made none,
the report folder and page as artifacts, and the headline numbers as metrics.

The analysis builds the report; this is how it reaches MLflow.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from nerplat.track import schema
from nerplat.run_keys import SUMMARY_RUN_KEY, SUMMARY_RUN_NAME

if TYPE_CHECKING:
    from mlflow import MlflowClient

METRICS_PER_BATCH = 1000  # MLflow takes at most 1000 metrics per batch


def create_summary_run(client: MlflowClient, experiment_id: str, experiment_name: str) -> str:
    """The summary run analysis artifacts go to, when the runner did not create one."""
    run = client.create_run(
        experiment_id,
        run_name=SUMMARY_RUN_NAME,
        tags={
            schema.KIND: "summary", schema.PHASE: "summary", schema.EXPERIMENT: experiment_name, schema.RUN_KEY: SUMMARY_RUN_KEY
        },
    )
    client.set_terminated(run.info.run_id)
    return run.info.run_id


def log_report(
    client: MlflowClient,
    run_id: str,
    folder: Path,
    *,
    artifact_path: str,
    page: str,
    page_name: str,
    metrics: Mapping[str, float],
) -> None:
    """The report `folder` under `artifact_path`, its `page` as the artifact `page_name`, and `metrics`."""
    from mlflow.entities import Metric

    client.log_artifacts(run_id, str(folder), artifact_path=artifact_path)
    client.log_text(run_id, page, page_name)
    now = int(time.time() * 1000)
    logged = [Metric(key, float(value), now, 0) for key, value in metrics.items()]
    for start in range(0, len(logged), METRICS_PER_BATCH):
        client.log_batch(run_id, metrics=logged[start : start + METRICS_PER_BATCH])
