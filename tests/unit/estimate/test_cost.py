"""The cost model: trial seconds, wall time and device-hours per arm from earlier runs of known durations, else a calibration."""

from __future__ import annotations

from pathlib import Path

import pytest

from nerplat.bench.runner_overhead import SWEEP_SPEC
from nerplat.catalog import default_catalog
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource
from nerplat.estimate.cost import (
    Calibration,
    EpochWork,
    Machine,
    MeasuredRun,
    calibration_head,
    calibration_key,
    predict_cost,
    uncalibrated,
)

DEVICE = "cpu: Test CPU x2 threads"
REPO = Path(__file__).parents[3]


@pytest.fixture(scope="module")
def sweep():
    """The bench sweep: one arm of minilm-l6, 20 tuning trials one at a time and 1 replicate, 2 CPUs a trial."""
    return compile_plan(SWEEP_SPEC, default_catalog())


def machine(cpus: int = 2, device: str = DEVICE) -> Machine:
    return Machine(cpus=cpus, gpus=0, label_of=lambda arm: device, precision_of=lambda arm: "fp32")


def run(
    arm: str,
    device: str | None = DEVICE,
    *,
    tokens: float = 8000.0,
    train_s: float = 4.0,
    wall_s: float = 6.0,
    encoder: str = "minilm-l6",
    objective: str = "ce",
    head: str | None = None,
) -> MeasuredRun:
    return MeasuredRun(
        arm=arm, objective=objective, encoder=encoder, device=device, precision="fp32", epochs=4, train_tokens=tokens,
        train_s=train_s, wall_s=wall_s, head=head,
    )


def work(tokens: float, passes: int = 1, dev: float = 0.0, test: float = 0.0):
    return lambda arm: EpochWork(tokens, passes, dev_tokens=dev, test_tokens=test)


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
    """Another objective's runs go by the tokens/s of one pass a batch: an objective of 3 passes (OVA-AUC's B, I, O)
    takes 3 times as long."""
    ova_auc = sweep.model_copy(update={"arms": [sweep.arms[0].model_copy(update={"objective": "ova_auc"})]})
    runs = [run("another/arm", tokens=4000.0, train_s=2.0, wall_s=3.0)]  # ce: 2000 tokens/s, 1 s outside training
    (arm_cost,) = predict_cost(ova_auc, runs, machine(), work_of=work(1000.0, passes=3)).arms
    assert arm_cost.trial_s == pytest.approx(4 * 1000 * 3 / 2000 + 1.0)
    assert "(none with ova_auc), on this device; epoch tokens counted on its data, 3 passes a batch" in arm_cost.basis
    runs.append(run("third/arm", tokens=4000.0, train_s=6.0, wall_s=7.0, objective="ova_auc"))  # ova_auc: 667 tokens/s
    (arm_cost,) = predict_cost(ova_auc, runs, machine(), work_of=work(1000.0, passes=3)).arms
    # the short end of all runs' rest
    assert arm_cost.runs == 1 and arm_cost.trial_s == pytest.approx(4 * 1000 / (4000 / 6) + 1.0)
    assert "1 runs of minilm-l6 with ova_auc, on this device; epoch tokens counted on its data" == arm_cost.basis


def test_more_cpus_run_more_trials_at_once_up_to_max_concurrent(sweep):
    arm = sweep.arms[0]
    loose = sweep.model_copy(update={"tune": sweep.tune.model_copy(update={"max_concurrent": None})})
    (arm_cost,) = predict_cost(loose, [run(arm.id)], machine(cpus=8), work_of=work(0.0)).arms
    assert arm_cost.at_once == 4 and arm_cost.wall_s == pytest.approx(21 * 6.0 / 4)
    (capped,) = predict_cost(sweep, [run(arm.id)], machine(cpus=8), work_of=work(0.0)).arms
    assert capped.at_once == 1  # the sweep's max_concurrent


def test_the_spec_wall_time_tunes_arm_by_arm_then_runs_each_look_of_replicates_in_one_queue():
    """entity_ratio's cpu profile: no tuning, 3 arms of 1-CPU trials (40, 60 and 80 s), looks of 3 seeds each."""
    plan = compile_plan(SpecSource(REPO / "specs" / "entity_ratio.yaml", "cpu", overrides=["train.epochs=20"]), default_catalog())
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
    assert predict_cost(tuned, runs, machine(), work_of=work(0.0), looks=[look] * 3).wall_s == pytest.approx(
        2 * (40 + 60 + 80) + 3 * 300.0
    )


def test_runs_of_another_device_or_encoder_give_no_prediction_and_say_why(sweep):
    arm = sweep.arms[0]
    runs = [run(arm.id, device="cuda: A100"), run(arm.id, encoder="bert-base")]
    cost = predict_cost(sweep, runs, machine(), work_of=work(1000.0))
    assert cost.arms[0].trial_s is None and cost.wall_s is None and cost.device_hours == {}
    assert cost.arms[0].basis == f"no earlier completed runs of minilm-l6 in fp32 on {DEVICE}"
    assert cost.lines()[-1].startswith("predicted wall time unknown")


def test_runs_of_another_head_never_stand_for_the_arm_and_runs_without_one_do(sweep):
    arm = sweep.arms[0]
    assert calibration_head(arm) == "softmax"
    bilstm = run(arm.id, head="bilstm_crf(hidden_size=300, layers=1)", train_s=400.0, wall_s=420.0)
    (arm_cost,) = predict_cost(sweep, [bilstm], machine(), work_of=work(1000.0)).arms
    assert arm_cost.trial_s is None and arm_cost.runs == 0
    (arm_cost,) = predict_cost(sweep, [bilstm, run(arm.id, head="softmax"), run(arm.id)], machine(), work_of=work(0.0)).arms
    assert arm_cost.runs == 2 and arm_cost.trial_s == pytest.approx(4 * 2000 / 2000 + 2.0)


def test_runs_made_before_devices_were_recorded_count_and_say_so(sweep):
    arm = sweep.arms[0]
    (arm_cost,) = predict_cost(sweep, [run(arm.id, device=None)], machine(), work_of=work(0.0)).arms
    assert arm_cost.trial_s == pytest.approx(6.0) and "device not recorded" in arm_cost.basis
    # a run that recorded this device wins over unrecorded ones
    (arm_cost,) = predict_cost(
        sweep, [run(arm.id, device=None), run(arm.id, train_s=8.0, wall_s=10.0)], machine(), work_of=work(0.0)
    ).arms
    assert arm_cost.trial_s == pytest.approx(4 * 2000 / 1000 + 2.0) and "on this device" in arm_cost.basis


def calibration(**changes) -> Calibration:
    """minilm-l6 with a softmax head on this test's device in fp32 at the sweep's batch size (16) and max_length (64)."""
    figures = dict(
        encoder="minilm-l6", device=DEVICE, precision="fp32", batch_size=16, max_length=64, head="softmax",
        trained="softmax by ce", steps=6,
        train_tokens_per_s=500.0, eval_tokens_per_s=2000.0, setup_s=3.0, seconds=20.0,
    )  # fmt: skip
    return Calibration(**figures | changes)


def test_an_arm_without_earlier_runs_goes_by_a_calibration_of_its_encoder_and_says_so(sweep):
    """The sweep: 4 epochs, dev (4000 sub-tokens) every 2, 20 tuning trials and 1 replicate (which alone scores test)."""
    cost = predict_cost(sweep, [], machine(), work(1000.0, passes=3, dev=4000.0, test=84000.0), calibrations=[calibration()])
    (arm_cost,) = cost.arms
    # training 4 x 1000 tokens x 3 passes at 500/s; rest: start-up 3 s, 2 dev evaluations of 4000 and
    # a 21st of a test split of 84000 sub-tokens a trial, at 2000 sub-tokens/s
    assert arm_cost.trial_s == pytest.approx(4 * 1000 * 3 / 500 + 3.0 + (2 * 4000 + 84000 / 21) / 2000)
    assert arm_cost.runs == 0
    assert arm_cost.basis == (
        "calibrated here (6 steps of minilm-l6 with softmax by ce); epoch tokens counted on its data, 3 passes a batch"
    )
    lines = cost.lines()
    assert lines[0].startswith(
        "calibration run here: 6 training steps of minilm-l6 with softmax by ce at batch 16, max_length 64 in fp32 "
        "on cpu: Test CPU x2"
    )
    assert "500 tokens/s a pass, dev 2000 tokens/s" in lines[0] and cost.calibrations == [calibration()]
    assert "every run at its epoch cap: early stopping can only shorten it" in lines[-1]


@pytest.mark.parametrize(
    "changes",
    [
        {"batch_size": 32}, {"max_length": 128}, {"precision": "bf16"}, {"encoder": "bert-base"}, {"device": "cpu: other"},
        {"head": "bilstm_softmax(hidden_size=300, layers=1)"},
    ],
)  # fmt: skip
def test_a_calibration_stands_only_for_arms_of_its_encoder_device_arithmetic_batch_size_length_and_head(sweep, changes):
    cost = predict_cost(sweep, [], machine(), work(1000.0), calibrations=[calibration(**changes)])
    assert cost.arms[0].trial_s is None and cost.wall_s is None and cost.calibrations == []


def test_arms_of_one_encoder_and_other_heads_go_by_their_own_heads_calibrations(sweep):
    """A BiLSTM of 300 units on the sweep's encoder is its own calibration's, its size and dropout apart
    from the softmax arm's (dropout changes no step's cost); its slower step makes its trial slower."""
    softmax = sweep.arms[0]
    fixed = softmax.fixed | {"head": {"name": "bilstm_softmax", "params": {"dropout": 0.5, "hidden_size": 300, "layers": 1}}}
    bilstm = softmax.model_copy(update={"id": "bilstm/arm", "label": "bilstm", "fixed": fixed})
    assert calibration_head(softmax) == "softmax" and calibration_head(bilstm) == "bilstm_softmax(hidden_size=300, layers=1)"
    assert calibration_key(bilstm, machine()) == (*calibration_key(softmax, machine())[:5], calibration_head(bilstm))
    both = sweep.model_copy(update={"arms": [softmax, bilstm]})
    bilstm_calibration = calibration(head=calibration_head(bilstm), trained="bilstm_softmax by ce", train_tokens_per_s=50.0)
    cost = predict_cost(both, [], machine(), work(1000.0), calibrations=[calibration(), bilstm_calibration])
    assert [arm.trial_s for arm in cost.arms] == pytest.approx([4 * 1000 / 500 + 3.0, 4 * 1000 / 50 + 3.0])
    assert "with bilstm_softmax by ce" in cost.arms[1].basis and cost.calibrations == [calibration(), bilstm_calibration]


def test_earlier_runs_win_over_a_calibration_and_only_arms_without_them_need_one(sweep):
    arm = sweep.arms[0]
    assert uncalibrated(sweep, [run("another/arm", encoder="bert-base")], machine()) == [arm]
    assert uncalibrated(sweep, [run("another/arm", device=None)], machine()) == []
    (arm_cost,) = predict_cost(sweep, [run(arm.id)], machine(), work(0.0), calibrations=[calibration()]).arms
    assert arm_cost.trial_s == pytest.approx(6.0) and arm_cost.runs == 1


def test_the_cost_lines_begin_with_what_auto_chose_here_and_why(sweep):
    said = ["precision of arm ce: evaluation auto: bf16 1.60x slower than fp32 here: fp32", "precision calibration (...)"]
    told = Machine(
        cpus=2, gpus=0, label_of=lambda arm: DEVICE, precision_of=lambda arm: "fp32",
        precision_lines=lambda arms: said if list(arms) == list(sweep.arms) else pytest.fail("other arms"),
    )  # fmt: skip
    cost = predict_cost(sweep, [run(sweep.arms[0].id)], told, work_of=work(2000))
    assert cost.lines()[:2] == said and cost.as_dict()["precision"] == said
    assert predict_cost(sweep, [run(sweep.arms[0].id)], machine(), work_of=work(2000)).precision == []
