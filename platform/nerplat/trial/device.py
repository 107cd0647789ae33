"""Where a trial computes and in which arithmetic: its device, host-to-device copies, autocast and
the gradient scaler (`train.precision`).

- Host-to-device copies go through pinned (page-locked) memory with `non_blocking=True` when the
  device is CUDA, so the copy of a batch overlaps the work already queued on the GPU; on the CPU a
  copy is a no-op and pinning would only cost a memcpy (and needs a CUDA build of torch).
- `bf16` and `fp16` run the training forward pass and the loss under `torch.autocast`; weights,
  gradients and optimiser state stay fp32 (mixed precision, not half-precision training). Dev and
  test evaluation run their forward passes in the same arithmetic (a model trained under autocast
  is evaluated the way it trained, at the same saving); decoding, thresholds and metrics read the
  scores in fp32. A trial in fp32 trains and evaluates in fp32.
- `train.eval_precision` sets evaluation's arithmetic apart from training's: a forward pass in bf16
  can cost a fraction of fp32's on a bf16 CPU (docs/performance.md, "Cheaper evaluation"), so an fp32
  trial can evaluate its dev set every epoch for less.
- `auto` (of either) is measured, not read from the CPU's flags: `trial.precision_calibration` times
  both arithmetics on this host where bf16 has units to run on (`runs_bf16_natively`: CPUs with
  AVX512-BF16 or AMX whose kernels torch dispatches at AVX512, CUDA devices of compute capability 8.0
  and later) and picks bf16 only where it is measurably faster. The resolved precision is what the
  trial runs, and what its run records.
- A spec that asks for `bf16` (training or evaluation) on trials without a GPU, on a CPU without bf16
  units, is warned about by `nerplat validate`, `plan`, `run` and `train` (`emulated_bf16_warnings`):
  there bf16 is emulated and costs several times fp32's time, so `auto` picks fp32.
- `fp16` needs a CUDA device: its narrow exponent range needs the gradient scaler (loss scaling,
  Micikevicius et al. 2018), and CPUs have no fp16 matrix units to gain from it. `bf16` has fp32's
  exponent range, needs no scaler, and runs on CPUs too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from nerplat.errors import Problem, UserInputError

if TYPE_CHECKING:
    from nerplat.plan.model import Arm

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}  # fp32: no autocast
NATIVE_BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})  # /proc/cpuinfo flags of bf16 matrix instructions
NATIVE_BF16_DISPATCH = "AVX512"  # torch's CPU capability whose kernels use them
CPUINFO = Path("/proc/cpuinfo")


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


@lru_cache(maxsize=1)
def cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str]:
    """The instruction-set flags of this machine's CPUs (Linux's /proc/cpuinfo; empty elsewhere)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return frozenset()
    return frozenset(
        flag for line in text.splitlines() if line.startswith("flags") for flag in line.partition(":")[2].split()
    )


def runs_bf16_natively(device: torch.device) -> bool:
    """Whether `device` has bf16 matrix units torch uses: an Ampere or later GPU, or a CPU with AVX512-BF16
    or AMX whose kernels torch dispatches at AVX512 (held to AVX2 by `ATEN_CPU_CAPABILITY=avx2`, or built
    without AVX512 kernels, it emulates bf16 on the same CPU)."""
    if device.type == "cuda":
        return torch.cuda.get_device_capability(device) >= (8, 0)
    return device.type == "cpu" and bool(cpu_flags() & NATIVE_BF16_CPU_FLAGS) and cpu_capability() == NATIVE_BF16_DISPATCH


def cpu_capability() -> str:
    """The widest vector instruction set torch dispatches its CPU kernels to here (AVX2, AVX512, ...),
    recorded on each run: bf16 speed, and so `auto`'s choice, differs between hosts that differ in it."""
    return torch.backends.cpu.get_cpu_capability()


def emulated_bf16_warnings(arms: Iterable[Arm]) -> list[str]:
    """A warning when arms that run on the CPU (no GPU per worker) ask for bf16, in training or
    evaluation, and this machine's CPU has no bf16 units torch uses: bf16 is emulated there, several
    times slower than fp32. Empty otherwise. `arms` are compiled (profile and overrides applied)."""
    if runs_bf16_natively(torch.device("cpu")):
        return []
    asking: dict[str, list[str]] = {"train.precision": [], "train.eval_precision": []}
    for arm in arms:
        if arm.resources.gpus_per_worker > 0:
            continue
        train, searched = arm.fixed["train"], arm.search_space.get("train.precision")
        if train.get("precision") == "bf16" or (searched is not None and searched.contains("bf16")):
            asking["train.precision"].append(arm.method)
        if train.get("eval_precision") == "bf16":
            asking["train.eval_precision"].append(arm.method)
    fields = [
        f"{field} bf16 (method{'s' if len(set(methods)) > 1 else ''} {', '.join(dict.fromkeys(methods))})"
        for field, methods in asking.items()
        if methods
    ]
    if not fields:
        return []
    verb = "trains" if asking["train.precision"] else "evaluates"
    units = (
        f"its AVX512-BF16 or AMX unused: torch's kernels are held to {cpu_capability()}"
        if cpu_flags() & NATIVE_BF16_CPU_FLAGS
        else f"torch CPU capability {cpu_capability()}, no AVX512-BF16 or AMX"
    )
    return [
        f"{'; '.join(fields)} on a CPU without bf16 units torch uses ({cpu_model()}, {units}): "
        f"bf16 is emulated there and {verb} several times slower than fp32. "
        "`precision: auto` picks fp32 here; `nerplat bench train --precision bf16` measures the slowdown on this machine "
        "(beside `nerplat bench train` in fp32)."
    ]


def device_label(device: torch.device, threads: int) -> str:
    """What a trial computes on, as a run records it and `nerplat plan` matches earlier runs by:
    `cuda: <GPU name>`, or `cpu: <CPU model> x<threads> threads` (throughput grows with them)."""
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    return f"{device.type}: {cpu_model()} x{threads} threads"


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else the platform's processor string."""
    try:
        text = CPUINFO.read_text()
    except OSError:
        text = ""
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    import platform

    return platform.processor() or platform.machine() or "unknown CPU"


def precision_runs_on(precision: str, device: torch.device) -> bool:
    """fp16 needs a CUDA device (see the module docstring); bf16 and fp32 run anywhere."""
    return precision != "fp16" or device.type == "cuda"


def refuse_fp16_off_cuda(precision: str, device: torch.device, field: str = "train.precision") -> None:
    """A trial's `train.precision` (or `field`) that its device cannot run, refused with what to do instead."""
    if not precision_runs_on(precision, device):
        message = (
            f"fp16 needs a CUDA device, but this trial runs on {device.type}: use bf16 (runs on CPUs) "
            "or fp32, or give the trial a GPU (resources.gpus_per_worker)"
        )
        raise UserInputError(Problem(message, path=field))


def autocast(precision: str, device: torch.device) -> AbstractContextManager:
    """The context of a forward pass (training or evaluation): `torch.autocast` at the precision's
    dtype, or nothing for fp32. `precision` is a resolved one (not `auto`)."""
    dtype = AUTOCAST_DTYPES.get(precision)
    return nullcontext() if dtype is None else torch.autocast(device.type, dtype=dtype)


def grad_scaler(precision: str, device: torch.device) -> torch.amp.GradScaler:
    """Loss scaling for fp16; a disabled scaler (every call passes through) for bf16 and fp32."""
    return torch.amp.GradScaler(device.type, enabled=precision == "fp16")
