"""A SQLite MLflow store with one registered tiny tagger: what the model commands are tested on."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest
from mlflow import MlflowClient

from nerplat.serving.bundle import load_bundle
from nerplat.serving.mlflow_models import ArmModel, log_tagger_model, register_arm_models, registered_model_name

ARM = ArmModel("exp", "conll2003/full/ce", "ce")
NAME = registered_model_name(ARM)  # ce.exp


@pytest.fixture(scope="module")
def store(tmp_path_factory, empty_mlflow_db, softmax_dir) -> SimpleNamespace:
    """A workdir whose mlflow.db (a copy of the session's migrated store) has one registered version of
    the session's softmax tagger, and a run with no model."""
    workdir = tmp_path_factory.mktemp("workdir")
    bundle = load_bundle(softmax_dir)
    shutil.copy(empty_mlflow_db, workdir / "mlflow.db")
    uri = f"sqlite:///{workdir / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("exp", artifact_location=str(workdir / "mlartifacts"))
    with_model, without_model = client.create_run(experiment), client.create_run(experiment)
    client.log_metric(with_model.info.run_id, "test_micro_f1", 0.25)
    client.log_metric(with_model.info.run_id, "selected_epoch", 1)  # MLflow keeps it as a float: the tag reads '1.0'
    log_tagger_model(uri, with_model.info.run_id, bundle.tagger, bundle.tokenizer, bundle.labels, bundle.head, bundle.encoder)
    register_arm_models(uri, ARM, [client.get_run(with_model.info.run_id)], "best", metric="micro_f1", split="test")
    return SimpleNamespace(
        workdir=workdir, bundle=bundle, bundle_dir=softmax_dir, run_id=with_model.info.run_id,
        bare_run_id=without_model.info.run_id,
    )
