"""Real SQLite MLflow stores for analysis tests (`tracking_uri` from tests/conftest.py), written like the runner writes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from nerplat.track import schema


class StoreWriter:
    """Writes runs shaped like the runner's into one experiment of a real store."""

    def __init__(self, tracking_uri: str, experiment: str, artifacts: Path):
        from mlflow import MlflowClient

        self.client = MlflowClient(tracking_uri)
        self.experiment = experiment
        self.experiment_id = self.client.create_experiment(experiment, artifact_location=artifacts.as_uri())

    def run(self, kind: str, tags: Mapping[str, object], metrics: Mapping[str, float] = (), params: Mapping[str, str] = ()) -> str:
        from mlflow.entities import Metric, Param

        all_tags = {schema.KIND: kind, schema.PHASE: {"trial": "tune"}.get(kind, kind), schema.EXPERIMENT: self.experiment}
        all_tags.update({key: str(value) for key, value in tags.items()})
        run = self.client.create_run(self.experiment_id, tags=all_tags)
        self.client.log_batch(
            run.info.run_id,
            metrics=[Metric(name, value, 0, 0) for name, value in dict(metrics).items()],
            params=[Param(name, value) for name, value in dict(params).items()],
        )
        return run.info.run_id

    def replicate(self, method: str, seed: int, metrics: Mapping[str, float], *, dataset="toy", size=20,
                  partition=0, status="completed", head="softmax", encoder="tiny") -> str:
        tags = {
            schema.ARM: f"{dataset}/low_resource-{size}/{method}", schema.METHOD: method, schema.DATASET: dataset,
            schema.SAMPLER: f"low_resource(size={size})", schema.SIZE: size, schema.SEED: seed,
            schema.PARTITION: partition, schema.OBJECTIVE: method, schema.HEAD: head, schema.ENCODER: encoder,
            schema.STATUS: status,
        }
        return self.run("replicate", tags, metrics)

    def summary(self, plan: Mapping | None) -> str:
        run_id = self.run("summary", {})
        if plan is not None:
            self.client.log_text(run_id, json.dumps(plan), schema.PLAN_ARTIFACT)
        return run_id


@pytest.fixture
def store(tracking_uri: str, tmp_path: Path) -> StoreWriter:
    return StoreWriter(tracking_uri, "toy-experiment", tmp_path / "artifacts")
