"""bench host: the machine's facts, the matmul peaks, the calibration measured anew and auto's choices.

The peaks and the calibration's steps are faked (never wall time): what is checked is what is said."""

from __future__ import annotations

import json

import pytest
import torch

from nerplat.bench import host as host_module
from nerplat.bench.host import bench_host
from nerplat.trial.precision_calibration import HostKey, cached_calibration
from precision_hosts import calibrated_host, step_times


@pytest.fixture
def slow_bf16_host(monkeypatch, tmp_path):
    """A CPU listing avx512_bf16 whose earlier calibration said bf16 was faster, and peaks of 74 and 43 GFLOP/s."""
    calibrated_host(monkeypatch, tmp_path, threads=1, train_bf16=0.5, evaluate_bf16=0.5)
    monkeypatch.setattr(host_module, "matmul_gflops", lambda seconds, dtype: 74.0 if dtype == torch.float32 else 43.0)
    return tmp_path


def test_bench_host_measures_anew_and_says_what_auto_chooses_and_why(slow_bf16_host):
    result = bench_host(threads=1, timer=step_times(train_bf16=1.6, evaluate_bf16=1.2))
    assert result.threads == 1 and result.cpu_capability == "AVX512" and result.bf16_flags == ["avx512_bf16"]
    assert result.matmul_fp32_gflops.median == 74.0 and len(result.matmul_bf16_gflops.repeats) == 3
    assert result.choices["train"] == {"precision": "fp32", "reason": "bf16 1.60x slower than fp32 here: fp32"}
    assert result.choices["evaluate"]["reason"] == "bf16 1.20x slower than fp32 here: fp32"
    assert cached_calibration(HostKey.here(1)) == result.calibration  # the earlier one replaced: auto reads this
    assert result.cache_file == str(HostKey.here(1).path())
    rows = dict(result.rows())
    assert rows["matmul peak bf16, GFLOP/s"] == "43 (43-43) (0.58x fp32)"
    assert rows["training step, ms (fp32 / bf16)"] == "1000 / 1600 (bf16 0.62x as fast)"
    assert rows["train.precision: auto"] == "bf16 1.60x slower than fp32 here: fp32"
    assert json.loads(json.dumps(result.as_dict()))["calibration"]["train"] == {"fp32_s": 1.0, "bf16_s": 1.6}


def test_bench_host_on_a_cpu_without_bf16_units_still_shows_what_bf16_costs(slow_bf16_host, monkeypatch):
    from nerplat.trial import device

    monkeypatch.setattr(device, "cpu_flags", lambda: frozenset({"avx2"}))
    result = bench_host(threads=1, timer=step_times(train_bf16=0.5, evaluate_bf16=0.5))
    assert result.bf16_flags == [] and result.calibration.train.bf16_s == 0.5
    assert result.choices["train"]["precision"] == "fp32" and "bf16 emulated on this cpu" in result.choices["train"]["reason"]

