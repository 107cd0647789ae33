"""The device decisions of a trial: pinned copies on CUDA only, autocast and the scaler per precision, fp16 refused off CUDA."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nerplat.errors import UserInputError
from nerplat.trial.batching import Batch
from nerplat.trial import device as device_module
from nerplat.trial.device import (
    autocast,
    cpu_capability,
    cpu_flags,
    emulated_bf16_warnings,
    grad_scaler,
    pins_memory,
    refuse_fp16_off_cuda,
    runs_bf16_natively,
    to_device,
)

CPU, CUDA = torch.device("cpu"), torch.device("cuda", 0)


def test_only_copies_to_cuda_go_through_pinned_memory():
    assert pins_memory(CUDA) and not pins_memory(CPU)


def test_a_copy_to_the_cpu_is_the_tensor_itself_unpinned():
    tensor = torch.arange(6)
    assert to_device(tensor, "cpu") is tensor and not tensor.is_pinned()


def test_a_batch_bound_for_cuda_is_pinned_then_copied_without_blocking(monkeypatch):
    """Every field of a batch: pin_memory() first, then .to(cuda, non_blocking=True) (no GPU needed to check the calls)."""
    calls = []
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: calls.append("pin") or self)
    monkeypatch.setattr(torch.Tensor, "to", lambda self, *args, **kwargs: calls.append((args, kwargs)) or self)
    field = torch.zeros(2, 3, dtype=torch.long)
    Batch(field, field, field, field.bool(), field, field[0]).to(CUDA)
    assert calls == ["pin", ((CUDA,), {"non_blocking": True})] * 6


def test_fp16_is_refused_off_cuda_with_its_spec_path():
    with pytest.raises(UserInputError, match="fp16 needs a CUDA device.*use bf16") as raised:
        refuse_fp16_off_cuda("fp16", CPU)
    assert raised.value.problems[0].path == "train.precision"
    refuse_fp16_off_cuda("fp16", CUDA)
    for precision in ("fp32", "bf16"):
        refuse_fp16_off_cuda(precision, CPU)


@pytest.mark.parametrize(("precision", "dtype"), [("fp32", torch.float32), ("bf16", torch.bfloat16)])
def test_autocast_computes_matmuls_in_the_precision_dtype(precision, dtype):
    a = torch.randn(4, 4)
    with autocast(precision, CPU):
        assert (a @ a).dtype == dtype
    assert (a @ a).dtype == torch.float32


@pytest.mark.parametrize(("precision", "scaled"), [("fp32", False), ("bf16", False), ("fp16", True)])
def test_only_fp16_scales_the_loss(precision, scaled):
    scaler = grad_scaler(precision, CPU)
    loss = torch.tensor(2.0)
    assert scaler.is_enabled() == scaled
    assert (scaler.scale(loss) > loss).item() == scaled


CPUINFO_HEAD = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx2 avx512f {extra}\nbogomips\t: 4000\n\n"


@pytest.mark.parametrize(("extra", "native"), [("avx512_bf16", True), ("amx_bf16 amx_tile", True), ("avx512bw", False)])
def test_a_cpu_runs_bf16_natively_only_with_avx512_bf16_or_amx(tmp_path, monkeypatch, extra, native):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(CPUINFO_HEAD.format(extra=extra) * 2)
    flags = cpu_flags.__wrapped__(cpuinfo)
    assert "avx2" in flags and "4000" not in flags
    monkeypatch.setattr(device_module, "cpu_flags", lambda: flags)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    assert runs_bf16_natively(CPU) == native


def test_a_bf16_cpu_whose_kernels_torch_holds_to_avx2_emulates_bf16(monkeypatch):
    monkeypatch.setattr(device_module, "cpu_flags", lambda: frozenset({"avx512_bf16", "amx_bf16"}))
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")  # ATEN_CPU_CAPABILITY=avx2
    assert not runs_bf16_natively(CPU)
    (warning,) = emulated_bf16_warnings(arms_with("train.precision=bf16"))
    assert "its AVX512-BF16 or AMX unused: torch's kernels are held to AVX2" in warning


def test_a_machine_without_cpuinfo_has_no_flags_and_no_bf16_units(tmp_path, monkeypatch):
    assert cpu_flags.__wrapped__(tmp_path / "missing") == frozenset()
    monkeypatch.setattr(device_module, "cpu_flags", lambda: frozenset())
    assert not runs_bf16_natively(CPU)


TINY_RUN = Path(__file__).parents[2] / "integration" / "specs" / "tiny_run.yaml"


def arms_with(*overrides: str):
    """The tiny integration spec's arms (ce, and mom with a searched lambda) under `--set` overrides."""
    from nerplat.catalog import default_catalog
    from nerplat.plan.compiler import compile_plan
    from nerplat.spec.validate import SpecSource

    return compile_plan(SpecSource(TINY_RUN, overrides=overrides), default_catalog()).arms


def test_bf16_on_a_cpu_without_bf16_units_is_warned_about_with_the_cpus_capability(monkeypatch):
    monkeypatch.setattr(device_module, "cpu_flags", lambda: frozenset({"avx2"}))
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    (warning,) = emulated_bf16_warnings(arms_with("train.precision=bf16"))
    assert warning.startswith("train.precision bf16 (methods ce, mom) on a CPU without bf16 units torch uses (")
    assert "torch CPU capability AVX2" in warning
    assert "bf16 is emulated there and trains several times slower than fp32" in warning
    assert "`precision: auto` picks fp32 here" in warning
    assert "`nerplat bench train --precision bf16` measures the slowdown" in warning
    (evaluating,) = emulated_bf16_warnings(arms_with("methods.mom.train.eval_precision=bf16"))
    assert evaluating.startswith("train.eval_precision bf16 (method mom) on a CPU")
    assert "evaluates several times slower" in evaluating


def test_a_searched_precision_that_may_be_bf16_is_warned_about_too(monkeypatch):
    monkeypatch.setattr(device_module, "cpu_flags", lambda: frozenset())
    (warning,) = emulated_bf16_warnings(arms_with("methods.mom.train.precision={choice: [fp32, bf16]}"))
    assert warning.startswith("train.precision bf16 (method mom) on a CPU")


@pytest.mark.parametrize(
    ("flags", "overrides"),
    [
        (frozenset(), ("train.precision=fp32",)),
        (frozenset(), ("train.precision=auto", "train.eval_precision=auto")),  # auto never picks emulated bf16
        (frozenset(), ("train.precision=bf16", "resources.gpus_per_worker=1")),  # the trials run on GPUs
        (frozenset({"avx512_bf16"}), ("train.precision=bf16",)),
        (frozenset({"amx_bf16"}), ("train.eval_precision=bf16",)),
    ],
)
def test_no_warning_without_bf16_or_where_bf16_runs_natively(monkeypatch, flags, overrides):
    monkeypatch.setattr(device_module, "cpu_flags", lambda: flags)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    assert emulated_bf16_warnings(arms_with(*overrides)) == []


def test_the_cpu_capability_is_torchs():
    assert cpu_capability() == torch.backends.cpu.get_cpu_capability() and cpu_capability()
