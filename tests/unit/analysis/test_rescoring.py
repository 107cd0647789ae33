"""Rescoring replicates from their logged predictions, on a real MLflow SQLite store."""

from __future__ import annotations

import pytest

from nerplat.track import schema
from nerplat.track.predictions import write_conll_predictions


@pytest.fixture
def store(tracking_uri, tmp_path):
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri)
    experiment = client.create_experiment("exp", artifact_location=str(tmp_path / "artifacts"))

    def replicate(status: str, predictions: bool, split: str = "test"):
        run = client.create_run(experiment, tags={schema.KIND: "replicate", schema.STATUS: status})
        client.log_param(run.info.run_id, "eval_split", split)
        client.log_metric(run.info.run_id, f"{split}_micro_f1", 0.123)  # strict scores 0 here: kept as logged
        if predictions:
            path = write_conll_predictions(
                tmp_path / schema.PREDICTIONS_ARTIFACT, [["EU", "rejects"]], [["B-ENT", "O"]], [["I-ENT", "O"]]
            )
            client.log_artifact(run.info.run_id, str(path))
        return run.info.run_id

    return client, replicate


def test_rescore_adds_only_the_keys_a_run_lacks_and_is_idempotent(store):
    from nerplat.analysis.rescoring import rescore_replicates

    client, replicate = store
    scored, on_dev = replicate("completed", True), replicate("completed", True, split="dev")
    bare, failed = replicate("completed", False), replicate("failed", True)
    done = rescore_replicates(client, "exp")
    assert (done.rescored, done.complete, done.without_predictions, done.not_completed) == (2, 0, (bare,), 1)
    metrics = client.get_run(scored).data.metrics
    assert metrics["test_micro_f1"] == 0.123 and metrics["test_conlleval_micro_f1"] == pytest.approx(1.0)
    assert "test_token_macro_f1" in done.added and "dev_conlleval_micro_f1" in client.get_run(on_dev).data.metrics
    assert "test_conlleval_micro_f1" not in client.get_run(failed).data.metrics
    again = rescore_replicates(client, "exp")
    assert (again.rescored, again.complete) == (0, 2) and again.line().startswith("rescored 0 replicate runs; 2 had every key")
