"""MLflow runs -> frames, read from a real SQLite store."""

from __future__ import annotations

import polars as pl
import pytest

from nerplat.analysis.run_frames import fetch_experiment, fetch_replicates, sampler_family
from nerplat.errors import UserInputError
from nerplat.track import experiment_reader, schema
from nerplat.track.experiment_reader import open_client


def test_replicate_frame_has_identity_columns_and_every_metric(store):
    store.replicate("ce", 0, {"test_micro_f1": 0.5, "test_type_PER_f1": 0.4})
    store.replicate("mom", 1, {"test_micro_f1": 0.6}, partition=3, size=50)
    frame = fetch_experiment(open_client(store.client.tracking_uri), store.experiment).replicates

    assert frame.height == 2
    assert frame.schema["size"] == pl.Int64 and frame.schema["seed"] == pl.Int64
    assert frame.schema["test_micro_f1"] == pl.Float64
    mom = frame.filter(pl.col("method") == "mom").row(0, named=True)
    assert (mom["dataset"], mom["size"], mom["seed"], mom["partition"]) == ("toy", 50, 1, 3)
    assert mom["sampler_family"] == "low_resource"
    assert mom["sampler_label"] == "low_resource-50"  # from the arm id <dataset>/<label>/<method>
    assert mom["test_type_PER_f1"] is None  # a metric another run has is null here, not dropped
    assert fetch_replicates(open_client(store.client.tracking_uri), store.experiment).equals(frame)  # what a look reads


def test_replicate_frame_says_why_each_run_stopped_and_whether_it_converged(store):
    client = store.client
    stopped = {0: ("patience", 7.0), 1: ("cap", 20.0)}
    for seed, (why, epoch) in stopped.items():
        run_id = store.replicate("ce", seed, {"test_micro_f1": 0.5, "stopped_epoch": epoch})
        client.set_tag(run_id, schema.STOPPED_BY, why)
    store.replicate("ce", 2, {"test_micro_f1": 0.5})  # recorded before runs said why they stopped
    for seed, fit in ((0, 1.0), (1, 0.0)):  # crfsuite: its own stopping test decides, though its one fit is the cap
        client.set_tag(
            store.replicate("crf", seed, {"test_micro_f1": 0.4, "fit_converged": fit, "stopped_epoch": 1.0}),
            schema.STOPPED_BY,
            "cap",
        )
    frame = fetch_experiment(open_client(client.tracking_uri), store.experiment).replicates
    assert (frame.schema["stopped_by"], frame.schema["stopped_epoch"], frame.schema["converged_run"]) == (
        pl.String, pl.Int64, pl.Boolean
    )
    rows = {
        (r["method"], r["seed"]): (r["stopped_by"], r["stopped_epoch"], r["converged_run"]) for r in frame.iter_rows(named=True)
    }
    assert rows == {
        ("ce", 0): ("patience", 7, True), ("ce", 1): ("cap", 20, False), ("ce", 2): (None, None, None),
        ("crf", 0): ("cap", 1, True), ("crf", 1): ("cap", 1, False),
    }


def test_size_falls_back_to_the_sentences_trained_on(store):
    from nerplat.track import schema as tags

    store.run("replicate", {tags.METHOD: "ce", tags.SEED: 0}, {"test_micro_f1": 0.5, "train_sentences": 100.0})
    frame = fetch_experiment(open_client(store.client.tracking_uri), store.experiment).replicates
    assert frame["size"].to_list() == [100]


def test_trial_frame_turns_numeric_params_into_floats(store):
    tags = {schema.METHOD: "mom", schema.DATASET: "toy", schema.TRIAL: "t1", schema.STATUS: "completed"}
    store.run("trial", tags, {"dev_best_micro_f1": 0.3}, {"objective.lambda": "0.25", "objective": "mom"})
    store.run("trial", tags | {schema.TRIAL: "t2"}, {"dev_best_micro_f1": 0.4}, {"objective.lambda": "1e-3", "objective": "mom"})
    trials = fetch_experiment(open_client(store.client.tracking_uri), store.experiment).trials

    assert trials.schema["param.objective.lambda"] == pl.Float64
    assert trials.schema["param.objective"] == pl.String
    assert sorted(trials["param.objective.lambda"].to_list()) == [0.001, 0.25]


def test_search_follows_page_tokens(store, monkeypatch):
    monkeypatch.setattr(experiment_reader, "PAGE_SIZE", 2)
    for seed in range(5):
        store.replicate("ce", seed, {"test_micro_f1": 0.1 * seed})
    frame = fetch_experiment(open_client(store.client.tracking_uri), store.experiment).replicates
    assert frame["seed"].to_list() == [0, 1, 2, 3, 4]


def test_plan_is_read_from_the_summary_run(store):
    store.summary({"analysis": {"baseline": "ce", "alpha": 0.01}})
    found = fetch_experiment(open_client(store.client.tracking_uri), store.experiment)
    assert found.summary_run_id is not None
    assert found.plan == {"analysis": {"baseline": "ce", "alpha": 0.01}}


def test_two_summary_runs_are_refused(store):
    store.summary(None)
    store.summary(None)
    with pytest.raises(UserInputError, match="2 runs tagged nerplat.kind=summary"):
        fetch_experiment(open_client(store.client.tracking_uri), store.experiment)


def test_unknown_experiment_lists_the_known_ones(store):
    with pytest.raises(UserInputError, match="no MLflow experiment named 'nope'.*toy-experiment"):
        fetch_experiment(open_client(store.client.tracking_uri), "nope")


def test_a_non_integer_seed_tag_is_a_user_error(store):
    store.run("replicate", {schema.METHOD: "ce", schema.SEED: "abc"}, {"test_micro_f1": 0.5})
    with pytest.raises(UserInputError, match="nerplat.seed='abc'"):
        fetch_experiment(open_client(store.client.tracking_uri), store.experiment)


@pytest.mark.parametrize(
    ("sampler", "family"),
    [
        ("untyped+low_resource(size=100)", "untyped+low_resource"),
        ("low_resource(size=100, partitions=10)", "low_resource(partitions=10)"),
        ("low_resource(partitions=10, size=100)", "low_resource(partitions=10)"),
        ("fraction(fraction=0.75)", "fraction"),
        ("sCR", "sCR"),
        (None, None),
    ],
)
def test_sampler_family_drops_only_the_size(sampler, family):
    assert sampler_family(sampler) == family


def test_epoch_frame_reads_the_per_epoch_dev_history_keeping_a_repeated_step_once(store):
    from mlflow.entities import Metric

    run_id = store.replicate("ce", 0, {"test_micro_f1": 0.5})
    points = [Metric("dev_micro_f1", v, t, step) for v, t, step in ((0.3, 1, 1), (0.4, 2, 2), (0.45, 3, 2), (0.5, 4, 3))]
    store.client.log_batch(run_id, metrics=points)
    epochs = fetch_experiment(open_client(store.client.tracking_uri), store.experiment).epochs
    assert epochs.filter(pl.col("run_id") == run_id).select("epoch", "value").rows() == [(1, 0.3), (2, 0.45), (3, 0.5)]


def test_chosen_frame_reads_the_configuration_each_tune_parent_chose(store):
    import json

    arm = {schema.PHASE: "tune", schema.DATASET: "toy", schema.METHOD: "mom"}
    store.run("arm", arm | {schema.ARM: "toy/full/mom", schema.SAMPLED: json.dumps({"objective.lambda": 0.25, "train.lr": 2e-5})},
              {"dev_best_micro_f1": 0.61})
    store.run("arm", arm | {schema.ARM: "toy/full/focal", schema.METHOD: "focal",
                            schema.SAMPLED: json.dumps({"objective.gamma": 2})},
              {"dev_best_micro_f1": 0.58})
    store.run("arm", arm | {schema.ARM: "toy/full/dice"})  # its tuning did not finish: nothing chosen
    store.run(
        "arm", {schema.PHASE: "replicate", schema.ARM: "toy/full/mom", schema.SAMPLED: json.dumps({"objective.lambda": 0.25})}
    )
    chosen = fetch_experiment(open_client(store.client.tracking_uri), store.experiment).chosen

    assert sorted(chosen["arm"].to_list()) == ["toy/full/focal", "toy/full/mom"]
    assert chosen.schema["param.objective.lambda"] == pl.Float64 and chosen.schema["param.objective.gamma"] == pl.Float64
    mom = chosen.filter(pl.col("arm") == "toy/full/mom").row(0, named=True)
    assert (mom["param.objective.lambda"], mom["param.train.lr"], mom["param.objective.gamma"]) == (0.25, 2e-5, None)
    assert mom["dev_best_micro_f1"] == 0.61


def test_a_sampled_tag_that_is_not_json_is_a_user_error(store):
    store.run("arm", {schema.PHASE: "tune", schema.SAMPLED: "{lambda: 0.2"})
    with pytest.raises(UserInputError, match="nerplat.sampled of run .* is not JSON"):
        fetch_experiment(open_client(store.client.tracking_uri), store.experiment)


def test_a_run_stopped_by_patience_at_its_first_evaluations_score_did_not_converge():
    from nerplat.analysis.run_frames import BEFORE_LEARNING, with_stopping, with_stops_before_learning

    runs = with_stopping(pl.DataFrame({
        "run_id": ["dip", "learned", "capped"], "stopped_by": ["patience", "patience", "cap"],
        "stopped_epoch": [5.0, 12.0, 20.0], "selected_epoch": [1.0, 8.0, 1.0],
    }))  # fmt: skip
    epochs = pl.DataFrame(
        {"run_id": ["dip", "learned", "capped"], "metric": ["dev_micro_f1"] * 3, "epoch": [1, 1, 1], "value": [0.135] * 3}
    )
    marked = with_stops_before_learning(runs, epochs)
    assert marked["stopped_by"].to_list() == [BEFORE_LEARNING, "patience", "cap"]
    assert marked["converged_run"].to_list() == [False, True, False]
    assert with_stopping(marked)["converged_run"].to_list() == [False, True, False]  # read again, the same
