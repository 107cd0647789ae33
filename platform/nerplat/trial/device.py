"""Where a trial computes and in which arithmetic: its device, host-to-device copies, autocast and
the gradient scaler (`train.precision`).

- Host-to-device copies go through pinned (page-locked) memory with `non_blocking=True` when the
  device is CUDA, so the copy of a batch overlaps the work already queued on the GPU; on the CPU a
  copy is a no-op and pinning would only cost a memcpy (and needs a CUDA build of torch).
- `bf16` and `fp16` run the training forward pass and the loss under `torch.autocast`; weights,
  gradients and optimiser state stay fp32 (mixed precision, not half-precision training). Dev and
  test evaluation run in fp32, so decoding and threshold search see exact scores.
- `fp16` needs a CUDA device: its narrow exponent range needs the gradient scaler (loss scaling,
  Micikevicius et al. 2018), and CPUs have no fp16 matrix units to gain from it. `bf16` has fp32's
  exponent range, needs no scaler, and runs on CPUs too.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext

import torch

from nerplat.errors import Problem, UserInputError

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}  # fp32: no autocast


def trial_device() -> torch.device:
    """The CUDA device of this worker (by LOCAL_RANK under DDP) when torch sees one, else the CPU."""
    if torch.cuda.is_available():
        rank = int(os.environ.get("LOCAL_RANK", 0))
        return torch.device("cuda", rank % torch.cuda.device_count())
    return torch.device("cpu")


def pins_memory(device: torch.device) -> bool:
    """Whether host-to-device copies to `device` go through pinned memory, asynchronously."""
    return device.type == "cuda"


def to_device(tensor: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    device = torch.device(device)
    if pins_memory(device):
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def precision_runs_on(precision: str, device: torch.device) -> bool:
    """fp16 needs a CUDA device (see the module docstring); bf16 and fp32 run anywhere."""
    return precision != "fp16" or device.type == "cuda"


def refuse_fp16_off_cuda(precision: str, device: torch.device) -> None:
    """A trial's `train.precision` that its device cannot run, refused with what to do instead."""
    if not precision_runs_on(precision, device):
        message = (
            f"fp16 needs a CUDA device, but this trial runs on {device.type}: use bf16 (runs on CPUs) "
            "or fp32, or give the trial a GPU (resources.gpus_per_worker)"
        )
        raise UserInputError(Problem(message, path="train.precision"))


def autocast(precision: str, device: torch.device) -> AbstractContextManager:
    """The context of a training forward pass: `torch.autocast` at the precision's dtype, or nothing for fp32."""
    dtype = AUTOCAST_DTYPES.get(precision)
    return nullcontext() if dtype is None else torch.autocast(device.type, dtype=dtype)


def grad_scaler(precision: str, device: torch.device) -> torch.amp.GradScaler:
    """Loss scaling for fp16; a disabled scaler (every call passes through) for bf16 and fp32."""
    return torch.amp.GradScaler(device.type, enabled=precision == "fp16")
