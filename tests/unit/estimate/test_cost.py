"""`nerplat plan --cost`: trial seconds, wall time and device-hours per arm from earlier runs of known durations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nerplat.bench.runner_overhead import SWEEP_SPEC
from nerplat.catalog import default_catalog
from nerplat.plan.compiler import compile_plan
from nerplat.plan.cost import EpochWork, Machine, MeasuredRun, epoch_work_on_data, predict_cost, this_machine
from nerplat.track import schema

DEVICE = "cpu: Test CPU x2 threads"
REPO = Path(__file__).parents[3]


@pytest.fixture(scope="module")
def sweep():
    """The bench sweep: one arm of minilm-l6, 20 tuning trials one at a time and 1 replicate, 2 CPUs a trial."""
    return compile_plan(SWEEP_SPEC, default_catalog())


def machine(cpus: int = 2, device: str = DEVICE) -> Machine:
    return Machine(cpus=cpus, gpus=0, label_of=lambda arm: device, precision_of=lambda arm: "fp32")


def run(
    arm: str, device: str | None = DEVICE, *, tokens: float = 8000.0, train_s: float = 4.0, wall_s: float = 6.0, encoder: str = "minilm-l6", objective: str = "ce"
) -> MeasuredRun:
    return MeasuredRun(arm=arm, objective=objective, encoder=encoder, device=device, precision="fp32", epochs=4, train_tokens=tokens, train_s=train_s, wall_s=wall_s)


def work(tokens: float, passes: int = 1):
    return lambda arm: EpochWork(tokens, passes)


def test_runs_of_the_same_arm_give_its_epoch_tokens_throughput_and_rest(sweep):
    arm = sweep.arms[0]
    runs = [run(arm.id), run(arm.id, train_s=5.0, wall_s=8.0), run(arm.id, train_s=3.0, wall_s=4.0)]
    cost = predict_cost(sweep, runs, machine(), work_of=lambda arm: pytest.fail("counted although its runs tell"))
    (arm_cost,) = cost.arms
    # 2000 tokens an epoch (their median) for 4 epochs at the fast end of 1600, 2000 and 2667 tokens/s
    # (90th percentile: 2533), plus the short end of 1, 2 and 3 s outside training (10th: 1.2 s)
    trial_s = 4 * 2000 / 2533.33 + 1.2
    assert arm_cost.trial_s == pytest.approx(trial_s, rel=1e-4)
    assert arm_cost.trials == 21 and arm_cost.at_once == 1 and arm_cost.runs == 3
    assert arm_cost.wall_s == pytest.approx(21 * trial_s, rel=1e-4) and cost.wall_s == pytest.approx(21 * trial_s, rel=1e-4)
    assert arm_cost.device_hours == pytest.approx(21 * trial_s * 2 / 3600, rel=1e-4)
    assert cost.device_hours == {"CPU": pytest.approx(21 * trial_s * 2 / 3600, rel=1e-4)}
    assert "3 runs of minilm-l6 of this arm, on this device" in arm_cost.basis


def test_an_arm_without_runs_of_its_own_counts_its_epoch_tokens_on_its_data(sweep):
    runs = [run("another/arm", tokens=4000.0, train_s=2.0, wall_s=3.0)]  # 2000 tokens/s, 1 s outside training
    (arm_cost,) = predict_cost(sweep, runs, machine(), work_of=work(1000.0)).arms
    assert arm_cost.trial_s == pytest.approx(4 * 1000 / 2000 + 1.0)
    assert "1 runs of minilm-l6 with ce, on this device; epoch tokens counted on its data" == arm_cost.basis


def test_runs_of_the_arms_objective_give_the_throughput_else_other_objectives_times_its_passes(sweep):
    """Another objective's runs go by the tokens/s of one pass a batch: an objective of 3 passes (OVA-AUC's B, I, O) takes 3 times as long."""
    ova_auc = sweep.model_copy(update={"arms": [sweep.arms[0].model_copy(update={"objective": "ova_auc"})]})
    runs = [run("another/arm", tokens=4000.0, train_s=2.0, wall_s=3.0)]  # ce: 2000 tokens/s, 1 s outside training
    (arm_cost,) = predict_cost(ova_auc, runs, machine(), work_of=work(1000.0, passes=3)).arms
    assert arm_cost.trial_s == pytest.approx(4 * 1000 * 3 / 2000 + 1.0)
    assert "(none with ova_auc), on this device; epoch tokens counted on its data, 3 passes a batch" in arm_cost.basis
    runs.append(run("third/arm", tokens=4000.0, train_s=6.0, wall_s=7.0, objective="ova_auc"))  # ova_auc: 667 tokens/s
    (arm_cost,) = predict_cost(ova_auc, runs, machine(), work_of=work(1000.0, passes=3)).arms
    assert arm_cost.runs == 1 and arm_cost.trial_s == pytest.approx(4 * 1000 / (4000 / 6) + 1.0)  # the short end of all runs' rest
    assert "1 runs of minilm-l6 with ova_auc, on this device; epoch tokens counted on its data" == arm_cost.basis


@pytest.mark.parametrize(("spec", "objective", "passes"), [("ova_auc_lowres", "ova_auc", 3), ("auc2t_lowres_conll", "comauc_2t", 2), ("ova_auc_lowres", "ce", 1)])
def test_the_passes_a_batch_takes_come_from_the_objectives_config_on_the_arms_labels(spec, objective, passes):
    plan = compile_plan(REPO / "specs" / f"{spec}.yaml", default_catalog(), profile="cpu")
    arm = next(arm for arm in plan.arms if arm.objective == objective)
    work_of = epoch_work_on_data(arm)
    assert work_of.passes == passes and work_of.tokens > 0


def test_more_cpus_run_more_trials_at_once_up_to_max_concurrent(sweep):
    arm = sweep.arms[0]
    loose = sweep.model_copy(update={"tune": sweep.tune.model_copy(update={"max_concurrent": None})})
    (arm_cost,) = predict_cost(loose, [run(arm.id)], machine(cpus=8), work_of=work(0.0)).arms
    assert arm_cost.at_once == 4 and arm_cost.wall_s == pytest.approx(21 * 6.0 / 4)
    (capped,) = predict_cost(sweep, [run(arm.id)], machine(cpus=8), work_of=work(0.0)).arms
    assert capped.at_once == 1  # the sweep's max_concurrent


def test_the_spec_wall_time_tunes_arm_by_arm_then_runs_each_look_of_replicates_in_one_queue():
    """entity_ratio's cpu profile: no tuning, 3 arms of 1-CPU trials (40, 60 and 80 s), looks of 3 seeds each."""
    plan = compile_plan(REPO / "specs" / "entity_ratio.yaml", default_catalog(), profile="cpu")
    ce, auc, comauc = (arm.id for arm in plan.arms)
    # 20 epochs of a quarter of each run's tokens at its own speed: 5 x its training seconds, no rest
    runs = [run(ce, train_s=8.0, wall_s=8.0), run(auc, train_s=12.0, wall_s=12.0), run(comauc, train_s=16.0, wall_s=16.0)]
    look = {ce: 3, auc: 3, comauc: 3}
    cost = predict_cost(plan, runs, machine(), work_of=work(0.0), looks=[look, look, look])
    assert [arm.trial_s for arm in cost.arms] == pytest.approx([40.0, 60.0, 80.0])
    assert [arm.at_once for arm in cost.arms] == [2, 2, 2] and cost.arms[0].wall_s == pytest.approx(9 * 40.0 / 2)
    # a look on 2 CPUs, in arm order: ce 0-40, 0-40, 40-80; auc 40-100, 80-140, 100-160; comauc 140-220,
    # 160-240, 220-300: it ends at 300 s, where the runs' seconds over 2 CPUs give 270
    assert cost.wall_s == pytest.approx(3 * 300.0) and cost.looks == 3
    assert "(tuning arm by arm, then 3 looks of replicates;" in cost.lines()[-1]
    one_look = predict_cost(plan, runs, machine(), work_of=work(0.0))  # default: every replicate at once
    assert one_look.looks == 1 and one_look.wall_s < cost.wall_s
    tuned = plan.model_copy(update={"arms": [arm.model_copy(update={"tune_trials": 3}) for arm in plan.arms]})
    # 3 tuning trials 2 at a time take two rounds of each arm's trial
    assert predict_cost(tuned, runs, machine(), work_of=work(0.0), looks=[look] * 3).wall_s == pytest.approx(2 * (40 + 60 + 80) + 3 * 300.0)


def test_runs_of_another_device_or_encoder_give_no_prediction_and_say_why(sweep):
    arm = sweep.arms[0]
    runs = [run(arm.id, device="cuda: A100"), run(arm.id, encoder="bert-base")]
    cost = predict_cost(sweep, runs, machine(), work_of=work(1000.0))
    assert cost.arms[0].trial_s is None and cost.wall_s is None and cost.device_hours == {}
    assert cost.arms[0].basis == f"no earlier completed runs of minilm-l6 in fp32 on {DEVICE}"
    assert cost.lines()[-1].startswith("predicted wall time unknown")


def test_runs_made_before_devices_were_recorded_count_and_say_so(sweep):
    arm = sweep.arms[0]
    (arm_cost,) = predict_cost(sweep, [run(arm.id, device=None)], machine(), work_of=work(0.0)).arms
    assert arm_cost.trial_s == pytest.approx(6.0) and "device not recorded" in arm_cost.basis
    # a run that recorded this device wins over unrecorded ones
    (arm_cost,) = predict_cost(sweep, [run(arm.id, device=None), run(arm.id, train_s=8.0, wall_s=10.0)], machine(), work_of=work(0.0)).arms
    assert arm_cost.trial_s == pytest.approx(4 * 2000 / 1000 + 2.0) and "on this device" in arm_cost.basis


def test_plan_cost_reads_an_mlflow_store_with_runs_of_known_durations(sweep, tmp_path, capsys, monkeypatch):
    """Three completed trials of the sweep's arm on this machine, 20 s each with 12 s of training steps."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param, RunTag

    from nerplat.cli import main

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    arm = sweep.arms[0]
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("earlier")
    label = this_machine().label_of(arm)
    for index in range(3):
        tags = {schema.KIND: "trial", schema.ARM: arm.id, schema.ENCODER: "minilm-l6", schema.STATUS: "completed", schema.DEVICE: label, schema.PRECISION: "fp32"}
        started = 1_000_000 + 100_000 * index
        created = client.create_run(experiment, start_time=started, tags=tags)
        metrics = {"time_train_s": 12.0, "train_tokens": 24_000.0, "time_eval_s": 5.0}
        client.log_batch(created.info.run_id, metrics=[Metric(k, v, 0, 0) for k, v in metrics.items()], params=[Param("train.epochs", "4")], tags=[RunTag("other", "x")])
        client.set_terminated(created.info.run_id, end_time=started + 20_000)
    client.create_run(experiment, tags={schema.KIND: "trial", schema.ENCODER: "minilm-l6", schema.STATUS: "failed"})  # not counted
    assert main(["plan", str(SWEEP_SPEC), "--cost", "--json", "--tracking-uri", uri]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["experiment"] == sweep.experiment  # the plan itself, with the cost beside it
    (arm_cost,) = printed["cost"]["arms"]
    assert arm_cost["runs"] == 3 and arm_cost["trial_s"] == pytest.approx(20.0)  # 4 x 6000 tokens at 2000/s + 8 s
    assert printed["cost"]["wall_s"] == pytest.approx(21 * 20.0)
    assert main(["plan", str(SWEEP_SPEC), "--cost", "--tracking-uri", uri]) == 0
    out = capsys.readouterr().out
    assert "21 trials x 20 s, 1 at a time: wall 7.0 min, 0.23 CPU-hours (3 runs of minilm-l6 of this arm, on this device)" in " ".join(out.split())


def test_plan_cost_without_a_store_says_there_is_nothing_to_go_by(sweep, tmp_path, capsys, monkeypatch):
    from nerplat.cli import main

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert main(["plan", str(SWEEP_SPEC), "--cost", "--tracking-uri", f"sqlite:///{tmp_path / 'none.db'}"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "cost ce: no prediction: no earlier completed runs of minilm-l6 in fp32" in out
    assert not (tmp_path / "none.db").exists()
