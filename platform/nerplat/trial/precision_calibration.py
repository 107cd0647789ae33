"""What `train.precision: auto` and `train.eval_precision: auto` resolve to on this host, by measuring
it rather than reading its CPU flags.

A CPU that lists bf16 instructions (AVX512-BF16, AMX) and whose kernels torch dispatches at AVX512
may still run bf16 autocast slower than fp32 (measured on an Intel Xeon listing avx512_bf16: 1.15-1.72x
slower forward passes; docs/performance.md, "auto measures"). So there `auto` times a few steps of a
MiniLM-shaped encoder (`WORKLOAD`: 6 layers, hidden 384, 12 heads, BERT's vocabulary; random weights,
as only the arithmetic's speed matters) in fp32 and under bf16 autocast, training (forward,
cross-entropy, backward, AdamW) and evaluation (a forward pass without gradients) apart, the two
precisions in turns so load that comes and goes falls on both, and chooses bf16 for a phase only
where its median step is at least `MIN_SPEEDUP` times faster than fp32's; fp32 otherwise, with the
measured ratio as the reason ("bf16 1.60x slower than fp32 here: fp32").

Where bf16 has no units to run on (`device.runs_bf16_natively` false) `auto` is fp32 without
measuring (bf16 is emulated there, 2-2.5x slower); on a GPU it is bf16 from compute capability 8.0.

The measurement is cached: one JSON file per `HostKey` (CPU model, the bf16 instructions it lists,
torch CPU capability, torch version, threads) under `$NERPLAT_CACHE/precision/` (default `~/.cache/nerplat/precision/`), so a host
measures once per torch build and thread count, and another host, torch or thread count measures
anew. A lock file keeps two processes of one host from measuring at once (each would slow the
other's steps). The driver (`nerplat run`, `train`, `plan --cost`) resolves `auto` before any trial
starts, so trials on its host read the cached result and never measure; a Ray worker on another
host without a cached result measures there once (`nerplat bench host` on that node beforehand
measures it idle). A calibration measured while other work shared the CPUs (its load, recorded and
printed with it, above the CPU count) slows both arithmetics' steps, unevenly, and may mislead:
`nerplat bench host` measures anew and replaces it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import torch

from nerplat.npz_cache import default_cache_dir
from nerplat.trial import device
from nerplat.trial.device import autocast, cpu_capability, runs_bf16_natively

FORMAT = 1  # of the cached files: a file of another format is measured anew
MIN_SPEEDUP = 1.10  # bf16 is chosen only where its step takes at most 1/1.10 of fp32's
PHASES = ("train", "evaluate")
CANDIDATES = ("fp32", "bf16")
ROUNDS = 4  # each phase and precision stepped this often, in turns; the first round warms up, untimed
TRAIN_SHAPE = (8, 64)  # sentences x sub-tokens of a training step (a sweep's batch of ~30-token sentences)
EVAL_SHAPE = (32, 64)  # of an evaluation batch
LABELS = 9  # CoNLL-2003's BIO tags
WORKLOAD = (
    f"MiniLM-L6 shape (6 layers, hidden 384), training steps of {TRAIN_SHAPE[0]} x {TRAIN_SHAPE[1]} sub-tokens, "
    f"evaluation batches of {EVAL_SHAPE[0]} x {EVAL_SHAPE[1]}; median of {ROUNDS - 1} in turns"
)

StepTimer = Callable[[str, str], float]  # (phase, precision) -> seconds of one step of that phase


@dataclass(frozen=True)
class HostKey:
    """What a calibration stands for: bf16's speed against fp32's differs between CPU models, torch's
    kernels (its build and dispatch level) and thread counts."""

    cpu_model: str
    bf16_units: str  # the bf16 instructions the CPU lists: virtual machines of one model name differ in them
    capability: str
    torch_version: str
    threads: int

    @classmethod
    def here(cls, threads: int) -> HostKey:
        units = ",".join(sorted(device.cpu_flags() & device.NATIVE_BF16_CPU_FLAGS)) or "none"
        return cls(device.cpu_model(), units, device.cpu_capability(), torch.__version__, threads)

    def path(self, cache_dir: Path | None = None) -> Path:
        text = json.dumps(asdict(self), sort_keys=True)
        return (cache_dir or default_cache_dir()) / "precision" / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"

    def text(self) -> str:
        threads = f"{self.threads} thread{'s' * (self.threads > 1)}"
        return f"{self.cpu_model}, bf16 units {self.bf16_units}, {self.capability}, torch {self.torch_version}, {threads}"


@dataclass(frozen=True)
class PrecisionChoice:
    """What `auto` resolves to for one phase, and why, in the words the run's first lines print."""

    precision: str
    reason: str  # e.g. "bf16 1.60x slower than fp32 here: fp32"
    measured: bool = False  # from a calibration (not from what the device lacks or is)


@dataclass(frozen=True)
class PhaseTimes:
    """Median seconds of one step of a phase in each candidate precision."""

    fp32_s: float
    bf16_s: float

    def choice(self) -> PrecisionChoice:
        """bf16 where it is at least `MIN_SPEEDUP` faster than fp32, else fp32; the ratio is the reason."""
        speedup = self.fp32_s / self.bf16_s
        if speedup >= MIN_SPEEDUP:
            return PrecisionChoice("bf16", f"bf16 {speedup:.2f}x faster than fp32 here: bf16", measured=True)
        if speedup < 1:
            return PrecisionChoice("fp32", f"bf16 {1 / speedup:.2f}x slower than fp32 here: fp32", measured=True)
        reason = f"bf16 only {speedup:.2f}x faster than fp32 here (below {MIN_SPEEDUP:.2f}x): fp32"
        return PrecisionChoice("fp32", reason, measured=True)

    def text(self) -> str:
        return f"fp32 {self.fp32_s * 1000:.0f} ms, bf16 {self.bf16_s * 1000:.0f} ms"


@dataclass(frozen=True)
class HostCalibration:
    """One host's measured step times in fp32 and bf16, training and evaluation apart."""

    key: HostKey
    train: PhaseTimes
    evaluate: PhaseTimes
    workload: str
    seconds: float  # what measuring took
    measured_at: str  # UTC, ISO 8601
    load: float  # the 1-minute load average when measuring began: above the CPU count, other work shared the steps

    def choice(self, phase: str) -> PrecisionChoice:
        return self.times(phase).choice()

    def times(self, phase: str) -> PhaseTimes:
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
        return self.train if phase == "train" else self.evaluate

    def line(self) -> str:
        """The calibration as the run's first lines, `plan --cost` and RUN.md cite it."""
        return (
            f"precision calibration ({self.key.text()}; measured {self.measured_at} in {self.seconds:.0f} s at load "
            f"{self.load:.1f} on {os.cpu_count()} CPUs): "
            f"training step {self.train.text()}, evaluation batch {self.evaluate.text()} ({self.workload})"
        )

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, **asdict(self)}, indent=2)

    @classmethod
    def from_json(cls, text: str) -> HostCalibration:
        data = json.loads(text)
        if data.pop("format", None) != FORMAT:
            raise ValueError("another format")
        return cls(
            key=HostKey(**data.pop("key")), train=PhaseTimes(**data.pop("train")),
            evaluate=PhaseTimes(**data.pop("evaluate")), **data,
        )  # fmt: skip


def measure(key: HostKey, timer: StepTimer | None = None, rounds: int = ROUNDS) -> HostCalibration:
    """Times `rounds` steps of each phase in each candidate precision, in turns (the order flipped
    every round), the first round untimed; at `key.threads` torch threads."""
    started, previous, load = time.perf_counter(), torch.get_num_threads(), os.getloadavg()[0]
    torch.set_num_threads(key.threads)
    try:
        timer = timer or MiniLMShapedSteps()
        times: dict[tuple[str, str], list[float]] = {(phase, p): [] for phase in PHASES for p in CANDIDATES}
        for round_ in range(rounds):
            for phase in PHASES:
                for precision in CANDIDATES if round_ % 2 else reversed(CANDIDATES):
                    seconds = timer(phase, precision)
                    if round_:
                        times[(phase, precision)].append(seconds)
    finally:
        torch.set_num_threads(previous)
    medians = {phase: PhaseTimes(*(statistics.median(times[(phase, p)]) for p in CANDIDATES)) for phase in PHASES}
    return HostCalibration(
        key=key, train=medians["train"], evaluate=medians["evaluate"], workload=WORKLOAD,
        seconds=time.perf_counter() - started, measured_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        load=load,
    )  # fmt: skip


def host_calibration(
    threads: int,
    *,
    cache_dir: Path | None = None,
    timer: StepTimer | None = None,
    remeasure: bool = False,
    announce: Callable[[str], None] | None = None,
) -> HostCalibration:
    """This host's calibration at `threads` torch threads: the cached one, else measured now and
    cached (`remeasure`: measured now whatever is cached). `announce` is told before a measurement."""
    key = HostKey.here(threads)
    path = key.path(cache_dir)
    if not remeasure and (cached := cached_calibration(key, cache_dir)) is not None:
        return cached
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process measuring this key: wait, then read its result
        if not remeasure and (cached := cached_calibration(key, cache_dir)) is not None:
            return cached
        if announce is not None:
            announce(f"measuring bf16 against fp32 on this host for `precision: auto` ({key.text()}; a few seconds, once)")
        calibration = measure(key, timer)
        _write(path, calibration.to_json())
    return calibration


def cached_calibration(key: HostKey, cache_dir: Path | None = None) -> HostCalibration | None:
    """The cached calibration of `key`; None when there is none, or it is unreadable, of another
    format or of another key (a hash collision)."""
    try:
        calibration = HostCalibration.from_json(key.path(cache_dir).read_text())
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return calibration if calibration.key == key else None


def _write(path: Path, text: str) -> None:
    """Written to a temporary name and renamed: a reader never sees half a file."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(handle, "w") as file:
        file.write(text)
    os.replace(temporary, path)


class MiniLMShapedSteps:
    """The default `StepTimer`: one training step or evaluation batch of a MiniLM-shaped encoder with a
    linear tagging head, as a trial runs them (autocast over the forward pass and the loss, AdamW)."""

    def __init__(self, seed: int = 0):
        # lazy: transformers' BERT, needed only when measuring
        from transformers import BertConfig, BertModel

        generator = torch.Generator().manual_seed(seed)
        config = BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
        torch.manual_seed(seed)
        self.encoder = BertModel(config, add_pooling_layer=False)
        self.head = torch.nn.Linear(config.hidden_size, LABELS)
        parameters = [*self.encoder.parameters(), *self.head.parameters()]
        self.optimizer = torch.optim.AdamW(parameters, lr=1e-5)
        self.inputs = {
            phase: torch.randint(1000, config.vocab_size, shape, generator=generator)
            for phase, shape in (("train", TRAIN_SHAPE), ("evaluate", EVAL_SHAPE))
        }
        self.labels = torch.randint(0, LABELS, TRAIN_SHAPE, generator=generator)
        self.cpu = torch.device("cpu")

    def __call__(self, phase: str, precision: str) -> float:
        started = time.perf_counter()
        if phase == "train":
            self._train_step(precision)
        else:
            self._evaluate(precision)
        return time.perf_counter() - started

    def _train_step(self, precision: str) -> None:
        self.encoder.train()
        with autocast(precision, self.cpu):
            states = self.encoder(input_ids=self.inputs["train"]).last_hidden_state
            loss = torch.nn.functional.cross_entropy(self.head(states).flatten(0, 1).float(), self.labels.flatten())
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()

    def _evaluate(self, precision: str) -> None:
        self.encoder.eval()
        with torch.no_grad(), autocast(precision, self.cpu):
            self.head(self.encoder(input_ids=self.inputs["evaluate"]).last_hidden_state).float()


def auto_precision(
    phase: str, device: torch.device, threads: int | None = None, announce: Callable[[str], None] | None = None
) -> PrecisionChoice:
    """What `auto` resolves to for `phase` (train or evaluate) of a trial on `device` with `threads`
    torch threads (default: this process's), and why (module docstring)."""
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        if (major, minor) >= (8, 0):
            return PrecisionChoice("bf16", f"GPU of compute capability {major}.{minor} (bf16 units from 8.0): bf16")
        return PrecisionChoice("fp32", f"GPU of compute capability {major}.{minor} (no bf16 units before 8.0): fp32")
    if not runs_bf16_natively(device):
        return PrecisionChoice("fp32", f"bf16 emulated on this {device.type} ({_no_units(device)}): fp32")
    return host_calibration(threads or torch.get_num_threads(), announce=announce).choice(phase)


def _no_units(device: torch.device) -> str:
    if device.type != "cpu":
        return "no bf16 units"
    return f"torch CPU capability {cpu_capability()}; bf16 runs natively only on AVX512 kernels with AVX512-BF16 or AMX"


def resolve_precision(precision: str, device: torch.device, threads: int | None = None) -> str:
    """The arithmetic a trial trains in on `device`: `auto` resolved (`auto_precision`); any other value as given."""
    return auto_precision("train", device, threads).precision if precision == "auto" else precision


def resolve_eval_precision(eval_precision: str | None, training: str, device: torch.device, threads: int | None = None) -> str:
    """The arithmetic of evaluation forward passes: as training (`training`, resolved) unless
    `train.eval_precision` says otherwise; its `auto` is the measured faster one where bf16 has units,
    bf16 on an Ampere or later GPU, else as training."""
    if eval_precision is None:
        return training
    if eval_precision != "auto":
        return eval_precision
    choice = auto_precision("evaluate", device, threads)
    return choice.precision if choice.measured or choice.precision == "bf16" else training
