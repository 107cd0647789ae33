"""A scratch store packed in one folder and unpacked in another reads and writes its artifacts in the new
folder, with MLflow's timestamps as they were, and leaves behind what a resume never reads."""

from __future__ import annotations

import shutil
import sqlite3
import tarfile
from pathlib import Path

import pytest

from nerplat.errors import UserInputError
from nerplat.track.store_archive import move_artifact_root, pack, unpack


@pytest.fixture
def old_store(tmp_path: Path, empty_mlflow_db: Path) -> Path:
    """A workdir as `nerplat run` leaves it: a run with a plan.json and a metric, a logged model with
    weights, an Optuna study file, Ray's folder and a report."""
    from mlflow import MlflowClient

    workdir = tmp_path / "old"
    workdir.mkdir()
    shutil.copy(empty_mlflow_db, workdir / "mlflow.db")
    client = MlflowClient(f"sqlite:///{workdir / 'mlflow.db'}")
    experiment = client.create_experiment("exp", artifact_location=str(workdir / "mlartifacts" / "exp"))
    run = client.create_run(experiment)
    (tmp_path / "plan.json").write_text('{"arms": []}')
    client.log_artifact(run.info.run_id, str(tmp_path / "plan.json"))
    client.log_metric(run.info.run_id, "test_micro_f1", 0.5, timestamp=1_700_000_000_000)
    client.set_terminated(run.info.run_id)
    model = client.create_logged_model(experiment, source_run_id=run.info.run_id)
    weights = Path(model.artifact_location.removeprefix("file://")) / "model.safetensors"
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"\0" * 1000)
    (workdir / "optuna.db").write_bytes(b"studies")
    (workdir / ".nerplat" / "ray").mkdir(parents=True)
    (workdir / "reports").mkdir()
    return workdir


def test_the_tarball_holds_the_stores_and_run_artifacts_not_ray_reports_or_model_weights(old_store, tmp_path):
    pack(old_store, tmp_path / "store.tar.gz")
    with tarfile.open(tmp_path / "store.tar.gz") as archive:
        names = archive.getnames()
    assert {"store.json", "mlflow.db", "optuna.db"} <= set(names)
    assert any(name.endswith("/artifacts/plan.json") for name in names)
    assert not [name for name in names if name.startswith((".nerplat", "reports")) or name.endswith(".safetensors")]


def test_an_unpacked_store_reads_and_writes_artifacts_in_its_new_folder_with_its_timestamps(old_store, tmp_path):
    from mlflow import MlflowClient

    pack(old_store, tmp_path / "store.tar.gz")
    before = MlflowClient(f"sqlite:///{old_store / 'mlflow.db'}").search_runs(["1"])
    shutil.rmtree(old_store)  # a fresh machine: the old folder is not there
    new = tmp_path / "new"
    new.mkdir()
    assert unpack(tmp_path / "store.tar.gz", new) >= 3  # the experiment, the run, the logged model
    client = MlflowClient(f"sqlite:///{new / 'mlflow.db'}")
    (run,) = client.search_runs(["1"])
    assert run.info.start_time == before[0].info.start_time and run.info.end_time == before[0].info.end_time
    (metric,) = client.get_metric_history(run.info.run_id, "test_micro_f1")
    assert metric.timestamp == 1_700_000_000_000
    assert [artifact.path for artifact in client.list_artifacts(run.info.run_id)] == ["plan.json"]
    assert client.create_run("1").info.artifact_uri.startswith(str(new / "mlartifacts" / "exp"))
    assert str(tmp_path / "old") not in (new / "mlflow.db").read_bytes().decode("latin-1")


def test_only_the_old_artifact_root_and_places_under_it_move(tmp_path):
    database = tmp_path / "m.db"
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE t (location TEXT, number REAL)")
        values = ["/w/mlartifacts", "/w/mlartifacts/1/a", "file:///w/mlartifacts/1", "/w/mlartifacts-other/1", "/x/w/mlartifacts"]
        connection.executemany("INSERT INTO t VALUES (?, 1.0)", [(value,) for value in values])
    assert move_artifact_root(database, "/w/mlartifacts", "/n/mlartifacts") == 3
    with sqlite3.connect(database) as connection:
        moved = [row[0] for row in connection.execute("SELECT location FROM t")]
    assert moved == ["/n/mlartifacts", "/n/mlartifacts/1/a", "file:///n/mlartifacts/1", *values[3:]]


def test_a_store_is_never_unpacked_over_another(old_store, tmp_path):
    pack(old_store, tmp_path / "store.tar.gz")
    with pytest.raises(UserInputError, match="already holds an MLflow store"):
        unpack(tmp_path / "store.tar.gz", old_store)
