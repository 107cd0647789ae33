"""Real SQLite MLflow stores for analysis tests (`tracking_uri` from tests/conftest.py), written like the
runner writes, and the three-method, two-size experiment the report tests analyse."""

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

    def run(
        self, kind: str, tags: Mapping[str, object], metrics: Mapping[str, float] = (), params: Mapping[str, str] = ()
    ) -> str:
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
                  partition=0, status="completed", head="softmax", encoder="tiny", stopped_by: str | None = None) -> str:
        tags = {
            schema.ARM: f"{dataset}/low_resource-{size}/{method}", schema.METHOD: method, schema.DATASET: dataset,
            schema.SAMPLER: f"low_resource(size={size})", schema.SIZE: size, schema.SEED: seed,
            schema.PARTITION: partition, schema.OBJECTIVE: method, schema.HEAD: head, schema.ENCODER: encoder,
            schema.STATUS: status,
        } | ({schema.STOPPED_BY: stopped_by} if stopped_by else {})
        return self.run("replicate", tags, metrics)

    def summary(self, plan: Mapping | None) -> str:
        run_id = self.run("summary", {})
        if plan is not None:
            self.client.log_text(run_id, json.dumps(plan), schema.PLAN_ARTIFACT)
        return run_id


@pytest.fixture
def store(tracking_uri: str, tmp_path: Path) -> StoreWriter:
    return StoreWriter(tracking_uri, "toy-experiment", tmp_path / "artifacts")


PLAN = {
    "analysis": {
        "baseline": "ce", "test": "paired_t", "alpha": 0.05, "comparisons": [["mom", "focal"]], "bootstrap_resamples": 200
    },
    "replicate_split": "test",
}
EFFECT = {"ce": 0.0, "focal": 0.02, "mom": 0.05}


def report_metrics(method: str, size: int, seed: int) -> dict[str, float]:
    base = 0.3 + size / 200 + EFFECT[method] + 0.01 * ((seed * 7 + size) % 3)
    return {
        "test_micro_precision": base + 0.02, "test_micro_recall": base - 0.02, "test_micro_f1": base,
        "test_type_PER_f1": base - 0.05, "test_type_PER_precision": base, "test_type_PER_recall": base - 0.1,
        "test_type_PER_support": 40.0, "test_macro_f1": base - 0.05, "test_macro_precision": base,
        "test_macro_recall": base - 0.1,
        "train_sentences": float(size), "train_size_factor": 1.0,
    }


def populate_report_store(store, skip: tuple[str, int, int] | None = None, plan: dict | None = PLAN) -> None:
    for method in EFFECT:
        for size in (20, 50):
            for seed in range(3):
                if (method, size, seed) != skip:
                    store.replicate(method, seed, report_metrics(method, size, seed), size=size)
    tags = {schema.METHOD: "mom", schema.DATASET: "toy", schema.STATUS: "completed"}
    for trial, lam in enumerate((0.0, 0.1, 0.5)):
        store.run(
            "trial", tags | {schema.TRIAL: str(trial)}, {"dev_best_micro_f1": 0.5 + lam / 10}, {"objective.lambda": str(lam)}
        )
    if plan is not None:
        store.summary(plan)
