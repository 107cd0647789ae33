"""A host whose `precision: auto` calibration is what a test says: bf16 units listed, and step times
cached for `auto` to read (a fake timer, never wall time: `trial.precision_calibration`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nerplat.trial import device as device_module
from nerplat.trial.precision_calibration import HostCalibration, host_calibration


def step_times(train_bf16: float, evaluate_bf16: float):
    """A `StepTimer`: fp32 steps take 1 s in both phases, bf16 steps as given."""
    return lambda phase, precision: 1.0 if precision == "fp32" else train_bf16 if phase == "train" else evaluate_bf16


def calibrated_host(
    monkeypatch: pytest.MonkeyPatch, cache: Path, threads: int, train_bf16: float, evaluate_bf16: float
) -> HostCalibration:
    """This process on a CPU listing avx512_bf16 with kernels at AVX512, its calibration at `threads`
    cached in `cache` (NERPLAT_CACHE) with bf16 steps `train_bf16` and `evaluate_bf16` times fp32's."""
    monkeypatch.setenv("NERPLAT_CACHE", str(cache))
    monkeypatch.setattr(device_module, "cpu_flags", lambda: frozenset({"avx512f", "avx512_bf16"}))
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    return host_calibration(threads, timer=step_times(train_bf16, evaluate_bf16), remeasure=True)
