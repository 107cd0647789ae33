"""The arithmetic of a trial: autocast and the scaler per precision, fp16 refused off CUDA."""

from __future__ import annotations

import pytest
import torch

from nerplat.errors import UserInputError
from nerplat.trial.device import autocast, check_precision, grad_scaler

CPU, CUDA = torch.device("cpu"), torch.device("cuda", 0)


def test_fp16_is_refused_off_cuda_with_its_spec_path():
    with pytest.raises(UserInputError, match="fp16 needs a CUDA device.*use bf16") as raised:
        check_precision("fp16", CPU)
    assert raised.value.problems[0].path == "train.precision"
    check_precision("fp16", CUDA)
    for precision in ("fp32", "bf16"):
        check_precision(precision, CPU)


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
