"""The device decisions of a trial: pinned copies on CUDA only, autocast and the scaler per precision, fp16 refused off CUDA."""

from __future__ import annotations

import pytest
import torch

from nerplat.errors import UserInputError
from nerplat.trial.batching import Batch
from nerplat.trial.device import autocast, refuse_fp16_off_cuda, grad_scaler, pins_memory, to_device

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
