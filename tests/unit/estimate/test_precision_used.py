"""RUN.md's precision lines: what the runs recorded, the host's calibration behind auto, and runs that paid for bf16."""

from __future__ import annotations

from types import SimpleNamespace

from nerplat.estimate.precision_used import main, precision_lines
from nerplat.track import schema
from nerplat.trial.device import cpu_model
from precision_hosts import calibrated_host


def run(train: str, evaluate: str, threads: int = 1):
    tags = {schema.PRECISION: train, schema.EVAL_PRECISION: evaluate, schema.DEVICE: f"cpu: {cpu_model()} x{threads} threads"}
    return SimpleNamespace(data=SimpleNamespace(tags=tags))


def test_the_lines_count_what_runs_recorded_and_cite_the_calibration(monkeypatch, tmp_path):
    calibration = calibrated_host(monkeypatch, tmp_path, threads=1, train_bf16=0.5, evaluate_bf16=0.5)
    lines = precision_lines([run("bf16", "bf16")] * 3)
    assert lines == [
        "- precision used (the runs' tags nerplat.precision, nerplat.eval_precision): training bf16, evaluation bf16 in 3 runs",
        f"- {calibration.line()}",
    ]


def test_runs_in_the_arithmetic_measured_slower_here_are_named(monkeypatch, tmp_path):
    calibrated_host(monkeypatch, tmp_path, threads=1, train_bf16=1.6, evaluate_bf16=0.5)
    lines = precision_lines([run("bf16", "bf16"), run("bf16", "bf16"), run("fp32", "bf16")])
    assert lines[0].endswith("training bf16, evaluation bf16 in 2 runs; training fp32, evaluation bf16 in 1 runs")
    assert lines[2] == (
        "- 2 runs' training ran in bf16, slower on this host than fp32 by the calibration above "
        "(bf16 1.60x slower than fp32 here: fp32)"
    )
    assert len(lines) == 3  # evaluation ran bf16, the faster


def test_without_a_calibration_at_the_runs_threads_the_lines_say_so(monkeypatch, tmp_path):
    monkeypatch.setenv("NERPLAT_CACHE", str(tmp_path))
    assert precision_lines([run("fp32", "fp32", threads=2)])[1] == (
        "- no precision calibration of this host at 2 threads (auto read no measurement)"
    )
    assert precision_lines([]) == ["- precision used: no trial or replicate runs to read it from"]


def test_an_unknown_experiment_exits_2(tracking_uri, capsys):
    assert main(["--tracking-uri", tracking_uri, "no-such-experiment"]) == 2
    assert "no MLflow experiment named 'no-such-experiment'" in capsys.readouterr().err
