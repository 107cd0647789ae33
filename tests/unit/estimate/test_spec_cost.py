"""`nerplat plan --cost`: the prediction from an MLflow store's runs, a calibration where it has none, and --budget."""

import json

import pytest
from precision_hosts import calibrated_host

from nerplat.bench.runner_overhead import SWEEP_SPEC
from nerplat.catalog import default_catalog
from nerplat.cli import main
from nerplat.estimate.host import arm_threads, this_machine
from nerplat.plan.compiler import compile_plan
from nerplat.track import schema


@pytest.fixture(scope="module")
def sweep():
    """The bench sweep: one arm of minilm-l6, 20 tuning trials one at a time and 1 replicate, 2 CPUs a trial."""
    return compile_plan(SWEEP_SPEC, default_catalog())


@pytest.fixture(autouse=True)
def _calibrated_host(sweep, monkeypatch, tmp_path):
    """The sweep evaluates in `auto` precision: its calibration cached, so no test times MiniLM-shaped
    steps on this host (seconds of CPU) and every host reads the same lines."""
    calibrated_host(monkeypatch, tmp_path / "cache", threads=arm_threads(sweep.arms[0]), train_bf16=1.6, evaluate_bf16=0.5)


@pytest.fixture
def store_uri(sweep, tracking_uri) -> str:
    """A store with three completed trials of the sweep's arm on this machine, 20 s each with 12 s of training steps."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param, RunTag

    arm = sweep.arms[0]
    client = MlflowClient(tracking_uri)
    experiment = client.create_experiment("earlier")
    label = this_machine().label_of(arm)
    for index in range(3):
        tags = {schema.KIND: "trial", schema.ARM: arm.id, schema.ENCODER: "minilm-l6", schema.STATUS: "completed",
                schema.DEVICE: label, schema.PRECISION: "fp32"}
        started = 1_000_000 + 100_000 * index
        created = client.create_run(experiment, start_time=started, tags=tags)
        metrics = {"time_train_s": 12.0, "train_tokens": 24_000.0, "time_eval_s": 5.0}
        client.log_batch(
            created.info.run_id,
            metrics=[Metric(k, v, 0, 0) for k, v in metrics.items()],
            params=[Param("train.epochs", "4")],
            tags=[RunTag("other", "x")],
        )
        client.set_terminated(created.info.run_id, end_time=started + 20_000)
    # not counted
    client.create_run(experiment, tags={schema.KIND: "trial", schema.ENCODER: "minilm-l6", schema.STATUS: "failed"})
    return tracking_uri


def test_plan_cost_reads_an_mlflow_store_with_runs_of_known_durations(sweep, store_uri, capsys):
    assert main(["plan", str(SWEEP_SPEC), "--cost", "--json", "--tracking-uri", store_uri]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["experiment"] == sweep.experiment  # the plan itself, with the cost beside it
    (arm_cost,) = printed["cost"]["arms"]
    assert arm_cost["runs"] == 3 and arm_cost["trial_s"] == pytest.approx(20.0)  # 4 x 6000 tokens at 2000/s + 8 s
    assert printed["cost"]["wall_s"] == pytest.approx(21 * 20.0)
    assert main(["plan", str(SWEEP_SPEC), "--cost", "--tracking-uri", store_uri]) == 0
    out = capsys.readouterr().out
    assert (
        "21 trials x 20 s, 1 at a time: wall 7.0 min, 0.23 CPU-hours (3 runs of minilm-l6 of this arm, on this device)"
        in " ".join(out.split())
    )


def test_plan_cost_without_a_store_or_a_calibration_says_there_is_nothing_to_go_by(sweep, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert main(["plan", str(SWEEP_SPEC), "--cost", "--no-calibrate", "--tracking-uri", f"sqlite:///{tmp_path / 'none.db'}"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "cost ce: no prediction: no earlier completed runs of minilm-l6 in fp32" in out
    assert not (tmp_path / "none.db").exists()


def test_a_budget_below_the_prediction_gives_the_cuts_that_fit_and_exits_0(sweep, store_uri, capsys):
    """21 trials of 20 s (4 epochs of 3 s and 8 s beside them) one at a time: 420 s over a budget of 5 min."""
    assert main(["plan", str(SWEEP_SPEC), "--cost", "--budget", "5m", "--json", "--tracking-uri", store_uri]) == 0
    budget = json.loads(capsys.readouterr().out)["cost"]["budget"]
    assert budget["budget_s"] == 300 and budget["wall_s"] == pytest.approx(420.0) and budget["fits"] is False
    # 2 epochs: 21 x 14 s; 14 tuning trials and the replicate: 15 x 20 s (the sweep has one replicate seed)
    assert [(cut["overrides"], cut["wall_s"]) for cut in budget["cuts"]] == [
        (["train.epochs=2"], pytest.approx(294.0)),
        (["tune.num_samples=14"], pytest.approx(300.0)),
    ]
    assert main(["plan", str(SWEEP_SPEC), "--cost", "--budget", "5m", "--tracking-uri", store_uri]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "budget 5.0 min: the predicted 7.0 min exceeds it; any one of these cuts would fit:" in out
    assert "an epoch cap of 2 (now 4): predicted 4.9 min (--set train.epochs=2)" in out
    assert main(["plan", str(SWEEP_SPEC), "--cost", "--budget", "8m", "--tracking-uri", store_uri]) == 0
    assert "budget 8.0 min: the predicted 7.0 min fits" in " ".join(capsys.readouterr().out.split())


def test_a_pilot_gives_the_wall_time_at_the_epochs_its_runs_trained(sweep, store_uri, tmp_path, capsys, monkeypatch):
    """The sweep's 21 trials of 20 s at 4 epochs (3 s of training each, 8 s beside): at a pilot's mean
    of 1.5 epochs (rounded up to 2) 14 s each; arms the pilot lacks stay at their cap."""
    import polars as pl

    from nerplat.estimate.spec_cost import PilotEpochs, at_pilot_epochs, pilot_epochs

    arm = sweep.arms[0]
    pilot = tmp_path / "pilot"
    pilot.mkdir()
    rows = [{"run_id": str(i), "arm": arm.id, "method": arm.method, "status": status, "stopped_epoch": epochs,
             "encoder": "minilm-l6", "head": "softmax"}
            for i, (status, epochs) in enumerate([("completed", 1), ("completed", 2), ("failed", 4)])]
    pl.DataFrame(rows).write_parquet(pilot / "runs.parquet")
    assert pilot_epochs(pl.read_parquet(pilot / "runs.parquet"), "p").epochs == {arm.id: 1.5}
    assert at_pilot_epochs(sweep, PilotEpochs({arm.id: 9.0}, "p")).arms[0].fixed["train"]["epochs"] == 4  # never past the cap
    assert at_pilot_epochs(sweep, PilotEpochs({"other": 1.0}, "p")).arms[0].fixed == arm.fixed
    argv = ["plan", str(SWEEP_SPEC), "--cost", "--tracking-uri", store_uri, "--pilot", str(pilot)]
    assert main([*argv, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)["cost"]
    assert printed["wall_s"] == pytest.approx(420.0)
    at_pilot = printed["at_pilot_epochs"]
    assert at_pilot["wall_s"] == pytest.approx(21 * 14.0) and at_pilot["epochs"] == {arm.id: 1.5}
    from nerplat.analysis import claim_design

    reads, read = [], claim_design.pilot_runs
    monkeypatch.setattr(claim_design, "pilot_runs", lambda plan, source: reads.append(source) or read(plan, source))
    assert main(argv) == 0
    assert reads == [pilot]  # the claims' sds and the arms' epochs from one read
    out = " ".join(capsys.readouterr().out.split())
    expected = "predicted wall time at the pilot's epochs 4.9 min (mean epochs its runs trained: ce 1.5;"
    assert f"{expected} {pilot / 'runs.parquet'}; arms it lacks at their cap; every look)" in out
