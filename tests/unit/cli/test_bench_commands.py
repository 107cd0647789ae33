"""`nerplat bench`: one group with every measurement, each command refusing bad options before any work
and laying out its bench module's result as a table or JSON (the figures themselves: tests/unit/bench)."""

from __future__ import annotations

import json

import pytest
import torch

from nerplat.bench import host as host_module
from nerplat.bench.host import HostBench
from nerplat.bench.repeats import Spread
from nerplat.cli import main
from nerplat.trial.precision_calibration import HostCalibration, HostKey, PhaseTimes

MEASUREMENTS = ("train", "mrc", "run", "peer", "tracking", "startup", "analysis", "host")


def test_the_bench_group_lists_every_measurement(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["bench", "--help"]) == 0
    listed = [line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("│ ") and line.split()[1:]]
    assert [name for name in listed if name in MEASUREMENTS] == list(MEASUREMENTS)


def _host_figures(threads: int | None) -> HostBench:
    key = HostKey("Example CPU", "avx512_bf16", "AVX512", "2.9.0", threads)
    calibration = HostCalibration(
        key, PhaseTimes(1.0, 1.6), PhaseTimes(1.0, 1.2), "minilm-shaped", 2.0, "2026-12-07T08:00:00+00:00", 0.5
    )
    slower = {"precision": "fp32", "reason": "bf16 1.60x slower than fp32 here: fp32"}
    return HostBench(
        "Example CPU", "AVX512", ["avx512_bf16"], "2.9.0", threads, 0.5, Spread.of([74.0] * 3), Spread.of([43.0] * 3),
        calibration, "/cache/calibration.json", {"train": slower, "evaluate": slower}, 30.0,
    )  # fmt: skip


def test_bench_host_prints_the_table_or_json(monkeypatch, capsys):
    monkeypatch.setattr(host_module, "bench_host", _host_figures)
    assert main(["bench", "host", "--threads", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["choices"]["train"]["precision"] == "fp32"
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["bench", "host", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "nerplat bench host (1 threads" in out and "bf16 1.60x slower than fp32 here: fp32" in out
    assert "43 (43-43) (0.58x fp32)" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
def test_bench_train_on_cuda_without_a_gpu_fails_before_any_work(capsys):
    assert main(["bench", "train", "--encoder", "tiny", "--device", "cuda"]) == 2
    assert "--device cuda: torch" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["train", "--encoder", "tiny"], ["run", "--profile", "smoke"]])
def test_bench_refuses_fewer_than_five_repeats(command, capsys):
    assert main(["bench", *command, "--repeats", "4"]) == 2
    assert "--repeats must be at least 5" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--postgres", "postgresql://u@h/db", "--postgres-bin", "/usr/bin"], "not both"),
        (["--postgres", "mysql://u@h/db"], "--postgres takes a postgresql://"),
        (["--postgres-bin", "/nonexistent"], "/nonexistent has no initdb"),
    ],
)
def test_bench_tracking_refuses_postgres_options_before_any_work(flags, message, capsys):
    assert main(["bench", "tracking", *flags]) == 2
    assert message in capsys.readouterr().err
