"""`auto` measured on the host: step times injected through a fake timer (never wall time), the
choice and its reason, the cache keyed by CPU model, torch and threads, and where nothing is measured."""

from __future__ import annotations

import json

import pytest
import torch

from nerplat.trial import device as device_module
from nerplat.trial import precision_calibration as calibration_module
from nerplat.trial.precision_calibration import (
    HostKey,
    MiniLMShapedSteps,
    auto_precision,
    cached_calibration,
    host_calibration,
    measure,
    resolve_eval_precision,
    resolve_precision,
)

CPU, CUDA = torch.device("cpu"), torch.device("cuda", 0)


def fake_timer(train_bf16: float, evaluate_bf16: float, calls: list | None = None):
    """Seconds of a step: fp32 1.0 in both phases, bf16 as given; the warm-up round costs 100x (must not count)."""
    seen: dict[tuple[str, str], int] = {}

    def timer(phase: str, precision: str) -> float:
        if calls is not None:
            calls.append((phase, precision))
        seen[(phase, precision)] = seen.get((phase, precision), 0) + 1
        seconds = 1.0 if precision == "fp32" else train_bf16 if phase == "train" else evaluate_bf16
        return seconds * (100 if seen[(phase, precision)] == 1 else 1)

    return timer


def refusing_timer(phase: str, precision: str) -> float:
    raise AssertionError("measured although a calibration was cached or not needed")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NERPLAT_CACHE", str(tmp_path))
    return tmp_path


@pytest.fixture
def bf16_cpu(monkeypatch):
    """A CPU that lists avx512_bf16 with torch's kernels at AVX512: the flags alone would say bf16."""
    monkeypatch.setattr(device_module, "cpu_flags", lambda: frozenset({"avx512_bf16", "avx512f"}))
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")


def test_bf16_slower_than_fp32_is_not_chosen_and_the_reason_says_by_how_much():
    calibration = measure(HostKey.here(2), fake_timer(train_bf16=1.6, evaluate_bf16=1.25))
    assert (calibration.train.fp32_s, calibration.train.bf16_s) == (1.0, 1.6)  # the warm-up round left out
    train, evaluate = calibration.choice("train"), calibration.choice("evaluate")
    assert (train.precision, train.reason) == ("fp32", "bf16 1.60x slower than fp32 here: fp32")
    assert (evaluate.precision, evaluate.reason) == ("fp32", "bf16 1.25x slower than fp32 here: fp32")


def test_bf16_is_chosen_only_where_measurably_faster():
    calibration = measure(HostKey.here(2), fake_timer(train_bf16=0.5, evaluate_bf16=0.95))
    assert calibration.choice("train").precision == "bf16"
    assert calibration.choice("train").reason == "bf16 2.00x faster than fp32 here: bf16"
    evaluate = calibration.choice("evaluate")  # 1.05x: within what noise moves
    assert evaluate.precision == "fp32" and evaluate.reason.startswith("bf16 only 1.05x faster than fp32 here (below 1.10x)")


def test_the_two_precisions_run_in_turns_the_order_flipped_every_round():
    calls: list = []
    measure(HostKey.here(1), fake_timer(1.0, 1.0, calls), rounds=3)
    assert calls[:4] == [("train", "bf16"), ("train", "fp32"), ("evaluate", "bf16"), ("evaluate", "fp32")]
    assert calls[4:8] == [("train", "fp32"), ("train", "bf16"), ("evaluate", "fp32"), ("evaluate", "bf16")]
    assert len(calls) == 12


def test_measuring_runs_at_the_keys_threads_and_restores_the_processs(monkeypatch, two_torch_threads):
    threads_seen = []
    before = torch.get_num_threads()
    measure(HostKey.here(1), lambda phase, precision: threads_seen.append(torch.get_num_threads()) or 1.0, rounds=2)
    assert set(threads_seen) == {1} and torch.get_num_threads() == before


def test_a_calibration_is_measured_once_then_read_from_the_cache(cache):
    first = host_calibration(2, timer=fake_timer(1.6, 1.6))
    files = list((cache / "precision").glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["key"]["threads"] == 2
    assert host_calibration(2, timer=refusing_timer) == first
    assert cached_calibration(HostKey.here(2)) == first


def test_another_thread_count_torch_build_cpu_model_or_bf16_units_measures_anew(cache, monkeypatch):
    host_calibration(2, timer=fake_timer(1.6, 1.6))
    assert host_calibration(1, timer=fake_timer(0.5, 0.5)).choice("train").precision == "bf16"
    monkeypatch.setattr(torch, "__version__", "9.9.9")
    assert cached_calibration(HostKey.here(2)) is None
    host_calibration(2, timer=fake_timer(1.6, 1.6))
    listed = device_module.cpu_flags() & device_module.NATIVE_BF16_CPU_FLAGS
    other = frozenset({"avx512_bf16"}) if listed != {"avx512_bf16"} else frozenset({"amx_bf16", "avx512_bf16"})
    monkeypatch.setattr(device_module, "cpu_flags", lambda: other)  # same model name, other bf16 units
    assert cached_calibration(HostKey.here(2)) is None and HostKey.here(2).bf16_units == ",".join(sorted(other))
    monkeypatch.setattr(device_module, "cpu_model", lambda: "Another CPU")
    assert host_calibration(2, timer=fake_timer(0.5, 0.5)).key.cpu_model == "Another CPU"


def test_remeasure_replaces_the_cached_calibration(cache):
    host_calibration(2, timer=fake_timer(1.6, 1.6))
    assert host_calibration(2, timer=fake_timer(0.5, 0.5), remeasure=True).choice("train").precision == "bf16"
    assert cached_calibration(HostKey.here(2)).choice("train").precision == "bf16"


@pytest.mark.parametrize("text", ["not json", '{"format": 0}', '{"format": 1, "key": {}}'])
def test_an_unreadable_or_stale_cache_file_is_measured_anew(cache, text):
    path = HostKey.here(2).path()
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert cached_calibration(HostKey.here(2)) is None
    host_calibration(2, timer=fake_timer(1.6, 1.6))
    assert cached_calibration(HostKey.here(2)) is not None


def test_measuring_is_announced_and_reading_the_cache_is_not(cache):
    told: list[str] = []
    host_calibration(2, timer=fake_timer(1.6, 1.6), announce=told.append)
    host_calibration(2, timer=refusing_timer, announce=told.append)
    assert len(told) == 1 and "measuring bf16 against fp32" in told[0] and "2 threads" in told[0]


def test_auto_on_a_bf16_cpu_where_bf16_is_slower_chooses_fp32_and_says_why(cache, bf16_cpu):
    host_calibration(2, timer=fake_timer(train_bf16=1.6, evaluate_bf16=1.2))
    choice = auto_precision("train", CPU, threads=2)
    assert (choice.precision, choice.reason, choice.measured) == ("fp32", "bf16 1.60x slower than fp32 here: fp32", True)
    assert resolve_precision("auto", CPU, threads=2) == "fp32"
    assert resolve_eval_precision("auto", "bf16", CPU, threads=2) == "fp32"  # measured: not "as training"


def test_auto_where_bf16_is_faster_chooses_it_for_each_phase_apart(cache, bf16_cpu):
    host_calibration(1, timer=fake_timer(train_bf16=0.6, evaluate_bf16=1.3))
    assert resolve_precision("auto", CPU, threads=1) == "bf16"
    assert resolve_eval_precision("auto", "bf16", CPU, threads=1) == "fp32"
    assert resolve_eval_precision(None, "bf16", CPU, threads=1) == "bf16"  # none: as training


def test_auto_on_a_cpu_without_bf16_units_is_fp32_without_measuring(cache, monkeypatch):
    monkeypatch.setattr(device_module, "cpu_flags", lambda: frozenset({"avx2"}))
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    monkeypatch.setattr(calibration_module, "MiniLMShapedSteps", lambda: refusing_timer)
    choice = auto_precision("train", CPU, threads=2)
    assert choice.precision == "fp32" and not choice.measured
    assert choice.reason == (
        "bf16 emulated on this cpu (torch CPU capability AVX2; bf16 runs natively only on AVX512 kernels with "
        "AVX512-BF16 or AMX): fp32"
    )
    assert resolve_eval_precision("auto", "bf16", CPU, threads=2) == "bf16"  # unmeasured: as training
    assert not (cache / "precision").exists()


@pytest.mark.parametrize(("capability", "resolved"), [((7, 5), "fp32"), ((8, 0), "bf16"), ((9, 0), "bf16")])
def test_auto_on_cuda_is_bf16_from_compute_capability_8(monkeypatch, capability, resolved):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    assert resolve_precision("auto", CUDA) == resolved
    assert resolve_eval_precision("auto", "fp16", CUDA) == ("bf16" if resolved == "bf16" else "fp16")


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_a_precision_other_than_auto_is_kept_whatever_the_host(monkeypatch, precision):
    monkeypatch.setattr(calibration_module, "host_calibration", refusing_timer)
    assert resolve_precision(precision, CPU) == precision
    assert resolve_eval_precision(precision, "fp32", CPU) == precision


def test_the_calibration_line_names_the_host_the_times_and_the_workload(cache):
    line = host_calibration(2, timer=fake_timer(1.6, 0.5)).line()
    assert line.startswith(f"precision calibration ({HostKey.here(2).text()}; measured ")
    assert "training step fp32 1000 ms, bf16 1600 ms, evaluation batch fp32 1000 ms, bf16 500 ms" in line
    assert "MiniLM-L6 shape" in line and torch.__version__ in line


def test_the_default_timer_steps_a_minilm_shaped_encoder_in_each_phase_and_precision():
    timer = MiniLMShapedSteps()
    assert sum(p.numel() for p in timer.encoder.parameters()) > 20_000_000  # MiniLM-L6's size, embeddings included
    before = timer.head.weight.detach().clone()
    for phase in ("train", "evaluate"):
        for precision in ("fp32", "bf16"):
            assert timer(phase, precision) > 0
    assert not torch.equal(before, timer.head.weight)  # training steps took optimiser steps
