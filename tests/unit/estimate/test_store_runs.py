"""What the cost prediction reads of an MLflow store's runs: epochs trained and the trial's own seconds."""

import pytest
from mlflow import MlflowClient
from mlflow.entities import Metric, Param

from nerplat.estimate.store_runs import measured_runs
from nerplat.track import schema


def _run(client, experiment, metrics: dict[str, float], started: int) -> None:
    tags = {schema.KIND: "replicate", schema.ARM: "a", schema.ENCODER: "minilm-l6", schema.STATUS: "completed",
            schema.DEVICE: "cpu", schema.PRECISION: "fp32"}
    run = client.create_run(experiment, start_time=started, tags=tags)
    client.log_batch(run.info.run_id, metrics=[Metric(k, v, 0, 0) for k, v in metrics.items()],
                     params=[Param("train.epochs", "40")])
    client.set_terminated(run.info.run_id, end_time=started + 900_000)  # 900 s after its look opened it


def test_an_early_stopped_replicate_counts_the_epochs_it_trained_and_its_own_seconds(tracking_uri):
    client = MlflowClient(tracking_uri)
    experiment = client.create_experiment("e")
    _run(client, experiment, {"time_train_s": 80.0, "train_tokens": 100_000.0, "stopped_epoch": 10.0,
                              "trial_seconds": 110.0}, 1_000_000)
    _run(client, experiment, {"time_train_s": 80.0, "train_tokens": 100_000.0}, 2_000_000)  # before the metrics existed
    stopped, older = sorted(measured_runs(client, ["minilm-l6"]), key=lambda run: run.epochs)
    assert (stopped.epochs, stopped.wall_s, stopped.rest_s) == (10, 110.0, pytest.approx(30.0))
    assert (older.epochs, older.wall_s) == (40, 900.0)  # the cap and the MLflow run's span, as before


def test_a_run_s_head_is_read_as_the_calibration_writes_an_arm_s(tracking_uri):
    client = MlflowClient(tracking_uri)
    experiment = client.create_experiment("e")
    _run(client, experiment, {"time_train_s": 80.0, "train_tokens": 100_000.0}, 1_000_000)
    (run_id,) = [r.info.run_id for r in client.search_runs([experiment])]
    client.log_batch(run_id, params=[Param("head", "bilstm_crf"), Param("head.hidden_size", "300"),
                                     Param("head.layers", "1"), Param("head.dropout", "0.5")])
    (measured,) = measured_runs(client, ["minilm-l6"])
    assert measured.head == "bilstm_crf(hidden_size=300, layers=1)"
