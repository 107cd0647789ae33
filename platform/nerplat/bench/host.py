"""`nerplat bench host`: what this machine is and what `precision: auto` would choose on it, in under a minute.

The CPU model, torch's CPU capability (the vector instructions its kernels dispatch to), the bf16
instructions the CPU lists, torch's version and threads; the matmul peak in fp32 and in bf16
(`bench.train.matmul_gflops`, interleaved `PEAK_REPEATS` times, median with min and max); then the
calibration `auto` uses (`trial.precision_calibration`), measured now and cached in place of any
earlier one, and the choices `train.precision: auto` and `train.eval_precision: auto` make from it,
with why. Where the CPU has no bf16 units torch uses, the calibration is still measured and shown (what
bf16 would cost), and `auto` is fp32 without reading it.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any

import torch

from nerplat.bench.repeats import Spread, interleaved
from nerplat.bench.train import matmul_gflops
from nerplat.trial import device
from nerplat.trial.precision_calibration import HostCalibration, HostKey, StepTimer, auto_precision, host_calibration

PEAK_REPEATS = 3  # each peak takes half a second: a median of three keeps the command under a minute
PEAK_SECONDS = 0.5


@dataclass
class HostBench:
    cpu_model: str
    cpu_capability: str  # torch.backends.cpu.get_cpu_capability()
    bf16_flags: list[str]  # the bf16 instructions /proc/cpuinfo lists (avx512_bf16, amx_bf16)
    torch_version: str
    threads: int
    load_before: float  # 1-minute load average when the bench started
    matmul_fp32_gflops: Spread
    matmul_bf16_gflops: Spread
    calibration: HostCalibration
    cache_file: str
    choices: dict[str, dict[str, str]]  # train / evaluate -> {"precision", "reason"}
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def rows(self) -> list[tuple[str, str]]:
        calibration = self.calibration
        ratio = self.matmul_bf16_gflops.median / self.matmul_fp32_gflops.median
        return [
            ("CPU model", self.cpu_model),
            ("torch CPU capability", self.cpu_capability),
            ("bf16 instructions listed", ", ".join(self.bf16_flags) or "none"),
            ("torch, threads", f"{self.torch_version}, {self.threads}"),
            ("matmul peak fp32, GFLOP/s", self.matmul_fp32_gflops.text(0)),
            ("matmul peak bf16, GFLOP/s", f"{self.matmul_bf16_gflops.text(0)} ({ratio:.2f}x fp32)"),
            ("training step, ms (fp32 / bf16)", _pair(calibration.train.fp32_s, calibration.train.bf16_s)),
            ("evaluation batch, ms (fp32 / bf16)", _pair(calibration.evaluate.fp32_s, calibration.evaluate.bf16_s)),
            ("train.precision: auto", self.choices["train"]["reason"]),
            ("train.eval_precision: auto", self.choices["evaluate"]["reason"]),
            ("calibration cached in", self.cache_file),
        ]


def _pair(fp32_s: float, bf16_s: float) -> str:
    return f"{fp32_s * 1000:.0f} / {bf16_s * 1000:.0f} (bf16 {fp32_s / bf16_s:.2f}x as fast)"


def bench_host(threads: int | None = None, timer: StepTimer | None = None) -> HostBench:
    """This machine's figures and `auto`'s choices at `threads` torch threads (default: torch's);
    `timer` times the calibration's steps (default: `precision_calibration.MiniLMShapedSteps`)."""
    started, load = time.perf_counter(), os.getloadavg()[0]
    threads = threads or torch.get_num_threads()
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        peaks = interleaved(
            {
                "fp32": lambda repeat: matmul_gflops(seconds=PEAK_SECONDS, dtype=torch.float32),
                "bf16": lambda repeat: matmul_gflops(seconds=PEAK_SECONDS, dtype=torch.bfloat16),
            },
            PEAK_REPEATS,
        )
    finally:
        torch.set_num_threads(previous)
    calibration = host_calibration(threads, timer=timer, remeasure=True)
    cpu = torch.device("cpu")
    choices = {phase: auto_precision(phase, cpu, threads) for phase in ("train", "evaluate")}
    return HostBench(
        cpu_model=device.cpu_model(), cpu_capability=device.cpu_capability(),
        bf16_flags=sorted(device.cpu_flags() & device.NATIVE_BF16_CPU_FLAGS),
        torch_version=torch.__version__, threads=threads, load_before=load,
        matmul_fp32_gflops=Spread.of(peaks["fp32"]), matmul_bf16_gflops=Spread.of(peaks["bf16"]),
        calibration=calibration, cache_file=str(HostKey.here(threads).path()),
        choices={phase: {"precision": c.precision, "reason": c.reason} for phase, c in choices.items()},
        seconds=time.perf_counter() - started,
    )  # fmt: skip
