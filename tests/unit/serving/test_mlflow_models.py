"""Logging, registering and loading taggers through MLflow's own model machinery (real SQLite store)."""

from __future__ import annotations

from types import SimpleNamespace

import mlflow
import pandas as pd
import pytest
from mlflow import MlflowClient

from nerplat.serving.mlflow_models import (
    ArmModel,
    arm_model_name,
    log_tagger_model,
    logged_model_of_run,
    register_arm_models,
    registered_model_name,
    select_replicates,
)
from nerplat.serving.records import predict_records


@pytest.fixture
def store(tracking_uri, tmp_path):
    """An experiment in tmp_path/mlflow.db, a copy of the session's store that `check_store` made."""
    client = MlflowClient(tracking_uri)
    experiment = client.create_experiment("exp", artifact_location=str(tmp_path / "artifacts"))
    return SimpleNamespace(uri=tracking_uri, client=client, experiment=experiment, artifacts=tmp_path / "artifacts")


CE = ArmModel("exp", "conll2003/full/ce", "ce")


def replicate_run(store, dev_best: float, test: float) -> str:
    run = store.client.create_run(store.experiment)
    store.client.log_metric(run.info.run_id, "dev_best_micro_f1", dev_best)
    store.client.log_metric(run.info.run_id, "test_micro_f1", test)
    return run.info.run_id


def log(store, run_id, bundle):
    return log_tagger_model(store.uri, run_id, bundle.tagger, bundle.tokenizer, bundle.labels, bundle.head, bundle.encoder)


def test_logged_model_round_trips_through_mlflows_pyfunc_loader(store, softmax_bundle, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    run_id = replicate_run(store, 0.5, 0.4)
    model_id = log(store, run_id, softmax_bundle)
    model = logged_model_of_run(store.uri, run_id)
    assert model.model_id == model_id and model.experiment_id == store.experiment
    mlflow.set_tracking_uri(store.uri)
    try:
        loaded = mlflow.pyfunc.load_model(model.model_uri)
    finally:
        mlflow.set_tracking_uri(None)
    frame = pd.DataFrame({"text": ["EU rejects German call to boycott British lamb .", "Peter Blackburn"]})
    assert loaded.predict(frame) == predict_records(softmax_bundle, frame.to_dict(orient="records"))
    tokens = pd.DataFrame({"tokens": [["Peter", "Blackburn"]]})
    assert loaded.predict(tokens)[0]["words"] == ["Peter", "Blackburn"]
    signature = loaded.metadata.signature
    assert [c.name for c in signature.inputs.inputs] == ["text", "tokens"]
    assert {c.name for c in signature.outputs.inputs} == {"words", "tags", "scores", "spans"}
    files = {p.name for p in (tmp_path / "artifacts").rglob("*") if p.is_file()}
    assert {"MLmodel", "weights.safetensors", "tagger.json", "input_example.json"} <= files
    assert not (tmp_path / "mlflow.db").exists() or (tmp_path / "mlflow.db").samefile(store.uri[len("sqlite:///") :])


def test_logging_twice_for_the_same_run_keeps_one_model(store, softmax_bundle):
    run_id = replicate_run(store, 0.5, 0.4)
    first = log(store, run_id, softmax_bundle)
    assert log(store, run_id, softmax_bundle) == first
    assert len(store.client.search_logged_models([store.experiment])) == 1


def test_best_registers_one_version_per_arm_and_deletes_the_other_models(store, softmax_bundle):
    runs = [replicate_run(store, 0.3, 0.9), replicate_run(store, 0.6, 0.1)]  # chosen on dev, not on test
    for run_id in runs:
        log(store, run_id, softmax_bundle)
    fetched = [store.client.get_run(r) for r in runs]
    for _ in range(2):  # a resumed run registers again: no second version
        versions = register_arm_models(store.uri, CE, fetched, "best", metric="micro_f1", split="test")
    name = "ce.exp"
    assert [m.name for m in store.client.search_registered_models()] == [name]
    registered = store.client.search_model_versions(f"name = '{name}'")
    assert [(v.version, v.run_id) for v in registered] == [(1, runs[1])]
    assert versions[0].tags == {"test_micro_f1": "0.1"}
    assert logged_model_of_run(store.uri, runs[0]) is None and logged_model_of_run(store.uri, runs[1]) is not None
    assert len(list(store.artifacts.rglob("weights.safetensors"))) == 1  # the other replicate's weights are gone


def test_all_registers_every_replicate_and_none_registers_nothing(store, softmax_bundle):
    runs = [replicate_run(store, 0.3, 0.9), replicate_run(store, 0.6, 0.1)]
    for run_id in runs:
        log(store, run_id, softmax_bundle)
    fetched = [store.client.get_run(r) for r in runs]
    assert register_arm_models(
        store.uri, ArmModel("exp", "conll2003/full/mom", "mom"), fetched, "none", metric="micro_f1", split="test"
    ) == []
    register_arm_models(store.uri, CE, fetched, "all", metric="micro_f1", split="test")
    assert sorted(v.run_id for v in store.client.search_model_versions("name = 'ce.exp'")) == sorted(runs)
    assert [m.name for m in store.client.search_registered_models()] == ["ce.exp"]  # `none` registers no model


def test_a_registered_model_is_named_by_the_arms_label_then_the_experiment():
    assert registered_model_name(
        ArmModel("tiny_run", "conll2003/low_resource-40/mom", "mom · low_resource-40")
    ) == "mom.low_resource-40.tiny_run"
    assert registered_model_name(CE) == "ce.exp"
    # MLflow refuses '/' and ':' in names, and nerplat reads NAME@ALIAS
    assert registered_model_name(ArmModel("e@1", "hf:org--x/full/ce", "ce · hf:org--x")) == "ce.hf-org--x.e-1"


def test_the_arms_model_holds_the_full_arm_in_its_tags_and_description(store):
    arm = ArmModel("tiny_run", "conll2003/low_resource-40/mom", "mom · low_resource-40")
    name = arm_model_name(store.uri, arm, "test")
    model = store.client.get_registered_model(name)
    assert model.tags == {"nerplat.experiment": "tiny_run", "nerplat.arm": "conll2003/low_resource-40/mom"}
    assert model.description.startswith(
        "nerplat tagger of arm conll2003/low_resource-40/mom (dataset conll2003, sampler setting low_resource-40, method mom) "
        "of experiment tiny_run"
    )
    assert arm_model_name(store.uri, arm, "test") == name and len(store.client.search_registered_models()) == 1


def test_an_arm_keeps_its_model_when_a_changed_spec_relabels_it(store):
    first = arm_model_name(store.uri, CE, "test")
    relabelled = ArmModel(CE.experiment, CE.arm_id, "ce · full")  # the spec gained a second sampler setting
    assert arm_model_name(store.uri, relabelled, "test") == first == "ce.exp"


def test_a_model_under_the_earlier_name_stays_and_gets_the_arms_tags(store):
    store.client.create_registered_model("exp.conll2003.full.ce")  # registered by an earlier nerplat
    assert arm_model_name(store.uri, CE, "test") == "exp.conll2003.full.ce"
    model = store.client.get_registered_model("exp.conll2003.full.ce")
    assert model.tags["nerplat.arm"] == "conll2003/full/ce" and "conll2003/full/ce" in model.description
    assert [m.name for m in store.client.search_registered_models()] == ["exp.conll2003.full.ce"]


def test_a_name_another_model_has_gets_a_hash_of_the_arm(store):
    store.client.create_registered_model("ce.exp")  # a user's own model
    name = arm_model_name(store.uri, CE, "test")
    assert name.startswith("ce.exp-") and len(name) == len("ce.exp-") + 6
    assert store.client.get_registered_model("ce.exp").tags == {}  # the user's model is left alone
    assert arm_model_name(store.uri, CE, "test") == name


def test_an_arm_id_with_a_quote_is_found_again(store):
    arm = ArmModel("exp", "o'brien/full/ce", "ce · o'brien")
    assert arm_model_name(store.uri, arm, "test") == arm_model_name(store.uri, arm, "test") == "ce.o'brien.exp"


def test_selection_rule():
    scores = {"a": 0.2, "b": 0.7, "c": None, "d": 0.7}
    assert select_replicates(scores, "best") == ["b"]
    assert select_replicates(scores, "best", mode="min") == ["a"]
    assert select_replicates(scores, "all") == ["a", "b", "d"]
    assert select_replicates(scores, "none") == []
    assert select_replicates({"c": None}, "best") == []
