"""Calibrated predictions held against a committed report's runs: each arm predicted as a replicate at
the epochs its runs trained, beside their logged seconds and epoch sub-tokens."""

from pathlib import Path

import polars as pl
import pytest

from nerplat.bench.runner_overhead import SWEEP_SPEC
from nerplat.catalog import default_catalog
from nerplat.estimate.against_reports import HEADER, check_report, report_command
from nerplat.estimate.cost import Calibration, EpochWork, Machine
from nerplat.estimate.spec_cost import HostEstimator
from nerplat.plan.compiler import compile_plan

REPO = Path(__file__).parents[3]
DEVICE = "cpu: Test CPU x2 threads"


@pytest.fixture
def report(tmp_path):
    """A report of the bench sweep's arm: two runs of 6 epochs (dev every 2nd), 6000 sub-tokens an epoch at 1000/s, 50 s each."""
    (arm,) = compile_plan(SWEEP_SPEC, default_catalog()).arms
    runs = pl.DataFrame({
        "run_id": ["a", "b", "c"], "arm": [arm.id, arm.id, "gone/arm"],
        "time_train_s": [36.0, 36.0, 1.0], "train_tokens": [36000.0, 36000.0, 1.0], "trial_seconds": [50.0, 50.0, 1.0],
    })  # fmt: skip
    epochs = pl.DataFrame({"run_id": ["a", "a", "a", "b", "b", "b", "c"], "epoch": [2, 4, 6, 2, 4, 6, 1]})
    runs.write_parquet(tmp_path / "runs.parquet")
    epochs.write_parquet(tmp_path / "epochs.parquet")
    (tmp_path / "RUN.md").write_text("- command: `nerplat run specs/sweep.yaml --profile cpu --resume` (from the root)\n")
    return tmp_path


def test_each_arm_is_predicted_as_a_replicate_at_its_runs_epochs_beside_their_seconds(report):
    plan = compile_plan(SWEEP_SPEC, default_catalog())
    calibration = Calibration(
        encoder="minilm-l6", device=DEVICE, precision="fp32", batch_size=16, max_length=64, head="softmax",
        trained="softmax by ce", steps=6,
        train_tokens_per_s=500.0, eval_tokens_per_s=2000.0, setup_s=3.0, seconds=20.0,
    )  # fmt: skip
    machine = Machine(cpus=2, gpus=0, label_of=lambda arm: DEVICE, precision_of=lambda arm: "fp32")
    estimator = HostEstimator(
        [], machine, lambda arm: EpochWork(3000.0, 1, dev_tokens=4000.0, test_tokens=8000.0), lambda arms, m: [calibration]
    )
    check = check_report(report, plan, estimator)
    # 6 epochs of 3000 sub-tokens at 500/s; start-up 3 s; 3 dev evaluations and the test split at 2000/s
    predicted = 6 * 3000 / 500 + 3.0 + (3 * 4000 + 8000) / 2000
    # the runs trained at 1000 one-pass sub-tokens/s: the calibration's training and evaluation twice as fast
    at_speed = 6 * 3000 / 1000 + 3.0 + (3 * 4000 + 8000) / 4000
    assert (check.arms, check.of, check.runs, check.epochs) == (1, 2, 2, "6")
    assert check.token_ratio == (0.5, 0.5) and check.speed_ratio == (0.5, 0.5) and check.measured_s == 50.0
    assert check.predicted_s == pytest.approx(predicted) and check.at_speed_s == pytest.approx(at_speed)
    assert check.row() == (
        f"| {report.name} | 1 of 2 | 2 | 6 | 0.50 | 0.50 | 50 | {predicted:.0f} | {predicted / 50:.2f} ({predicted / 50:.2f}) "
        f"| {at_speed:.0f} | {at_speed / 50:.2f} ({at_speed / 50:.2f}) |"
    )
    assert all(line.count("|") == check.row().count("|") for line in HEADER.splitlines())  # as many columns


def test_the_spec_and_profile_come_from_the_reports_run_command(report):
    assert report_command(report) == (Path("specs/sweep.yaml"), "cpu")
    # the command ends the quote
    assert report_command(REPO / "docs" / "results" / "entity_ratio") == (Path("specs/entity_ratio.yaml"), "cpu")
