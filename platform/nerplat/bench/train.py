"""`nerplat bench train`: the trial loop's training throughput against a plain PyTorch loop.

Both loops train the same encoder architecture on the same batches (the trial loop's own
length-grouped batches of one epoch; on a CPU nerplat's tagger encodes each in length pieces,
`models.tagger.length_pieces`, the plain loop in one pass) in this process, an epoch of each in turn, `repeats` times
(plain, nerplat, matmul peak, plain, nerplat, peak, ...: `bench.repeats`), each loop continuing
from its previous epoch; the first step of each loop's first epoch is not timed (it allocates the
optimiser's state). Every figure is the median of the repeats with its min and max, and a ratio or
MFU is taken within a repeat before the median is, so it is meaningful on a noisy machine even when
absolute figures are not. MFU counts only real
(non-padding) tokens against this machine's matmul throughput measured in the same run, on
the benchmarked device (`--device cuda`: both loops and the matmul peak on the GPU, with the
device synchronised before every clock reading) and in the benchmarked arithmetic (`--precision
bf16`: both loops under autocast, as `train.precision`, against a bf16 matmul peak; fp16 needs
CUDA, as in trials).

FLOPs per real token of a training step (forward + backward = 3 x forward):
    6 * (non-embedding parameters) + 6 * layers * hidden * (mean attended length) * 2
i.e. the standard 6N rule plus the attention score and value products.

Where a step's time goes: one more epoch of the trial loop, after the timed ones, under
torch.profiler (so the profiler's overhead does not touch the figures above), its self time per
torch op. The matrix-product share bounds MFU: the rest of the time does few FLOPs whatever its
speed. These shares come from that one epoch, not from repeats.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from nerplat.bench.repeats import DEFAULT_REPEATS, Spread, check_repeats, interleaved, ratios
from nerplat.config.trial import Component, DatasetRef, EncoderSettings, TrainSettings, TrialConfig
from nerplat.errors import Problem, UserInputError
from nerplat.models.encoders import load_encoder
from nerplat.trial.batching import iterate_batches
from nerplat.trial.device import AUTOCAST_DTYPES, autocast, grad_scaler, precision_runs_on
from nerplat.trial.session import TrialSession

DEVICES = ("cpu", "cuda")
PRECISIONS = ("fp32", *AUTOCAST_DTYPES)  # train.precision's values: fp32 or an autocast dtype


PEAK_SIZES = (256, 512, 1024)  # square matrix sides of the matmul peak, smallest first
MATMUL_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"})


@dataclass
class OpShare:
    op: str
    share: float  # of the self time of every torch op in the profiled epoch
    calls: int


@dataclass
class TrainBenchResult:
    encoder: str
    device: str
    precision: str
    sentences: int
    batches: int
    threads: int
    repeats: int  # timed epochs of each loop, interleaved
    plain_tokens_per_s: Spread
    nerplat_tokens_per_s: Spread
    ratio: Spread  # nerplat / plain, per repeat
    matmul_gflops: Spread  # of the benchmarked precision's dtype
    flops_per_token: float
    mfu: Spread
    plain_mfu: Spread
    peak_rss_mb: float
    matmul_share: float  # of the profiled epoch's torch op self time, in matrix products
    ops: list[OpShare]  # the ops taking the most self time, largest first

    def as_dict(self) -> dict:
        return asdict(self)

    def rows(self) -> list[tuple[str, str]]:
        """The figures as (name, `median (min-max)`) rows."""
        return [
            ("plain PyTorch loop, tokens/s", self.plain_tokens_per_s.text(0)),
            ("nerplat trial loop, tokens/s", self.nerplat_tokens_per_s.text(0)),
            ("ratio (nerplat / plain)", self.ratio.text(3)),
            (f"{self.precision} matmul peak on {self.device}, GFLOP/s", self.matmul_gflops.text(1)),
            ("MFU nerplat (real tokens)", self.mfu.text(3)),
            ("MFU plain loop", self.plain_mfu.text(3)),
            ("peak RSS, MB", f"{self.peak_rss_mb:.0f}"),
        ]


def bench_device(name: str) -> torch.device:
    """The device `--device` names; CUDA only when torch sees a CUDA device."""
    if name not in DEVICES:
        raise UserInputError(Problem(f"--device must be one of {', '.join(DEVICES)}, got {name!r}", path="--device"))
    if name == "cuda" and not torch.cuda.is_available():
        build = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else "built without CUDA"
        message = f"--device cuda: torch {torch.__version__} ({build}) sees no CUDA device here; use --device cpu"
        raise UserInputError(Problem(message, path="--device"))
    return torch.device(name)


def bench_precision(name: str, device: torch.device) -> str:
    """The arithmetic `--precision` names; fp16 only on CUDA (its gradient scaler and matrix units)."""
    if name not in PRECISIONS:
        raise UserInputError(Problem(f"--precision must be one of {', '.join(PRECISIONS)}, got {name!r}", path="--precision"))
    if not precision_runs_on(name, device):
        message = f"--precision fp16 needs --device cuda; on {device.type} use bf16 or fp32"
        raise UserInputError(Problem(message, path="--precision"))
    return name


def _clock(device: torch.device) -> float:
    """perf_counter once the device has finished its queued work (CUDA runs asynchronously)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def matmul_gflops(
    sizes: tuple[int, ...] = PEAK_SIZES,
    seconds: float = 0.5,
    device: torch.device = torch.device("cpu"),
    dtype: torch.dtype = torch.float32,
) -> float:
    """Best matmul throughput in `dtype` over repeated square products (the device's practical peak).

    The sizes are tried smallest first, each for an equal share of the time left, and a larger size
    only while its first product (predicted from the last one's time) fits in what is left: where
    `dtype` is emulated (bf16 on a CPU without bf16 units) one large product alone would take many
    times `seconds`, and the peak would cost more than the loops it is the yardstick of."""
    best, deadline = 0.0, _clock(device) + seconds
    for index, size in enumerate(sizes):
        a, b = torch.randn(size, size, device=device, dtype=dtype), torch.randn(size, size, device=device, dtype=dtype)
        share_ends = _clock(device) + (deadline - _clock(device)) / (len(sizes) - index)
        while True:  # at least one product per size tried: a cold one only ever lowers the best
            started = _clock(device)
            torch.mm(a, b)
            took = _clock(device) - started
            best = max(best, 2 * size**3 / took)
            if time.perf_counter() >= share_ends:
                break
        if index + 1 < len(sizes) and took * (sizes[index + 1] / size) ** 3 > deadline - _clock(device):
            break
    return best / 1e9


def training_flops_per_token(model: nn.Module, mean_length: float) -> float:
    config = model.config
    embedding = sum(p.numel() for n, p in model.named_parameters() if "embeddings" in n)
    dense = sum(p.numel() for p in model.parameters()) - embedding
    attention = 2 * config.num_hidden_layers * config.hidden_size * mean_length * 2  # QK^T and AV, forward
    return 6 * dense + 3 * attention


def op_breakdown(session: Any, epoch: int, top: int = 10) -> tuple[float, list[OpShare]]:
    """Epoch `epoch` of a set-up trial session under torch.profiler: matmul share and top ops by self time.

    Profile a warm epoch: the first one creates the optimiser's state (zero-filled moments for every
    weight) and touches fresh memory, one-off costs that took a tenth of a short profiled epoch's op
    time and are not what a step costs."""
    from torch.profiler import ProfilerActivity, profile

    device = session.device
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as profiled:
        session.train_epoch(epoch)
    field = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    events = [(e.key, getattr(e, field), e.count) for e in profiled.key_averages()]  # self time in microseconds
    total = sum(self_time for _, self_time, _ in events) or 1.0
    matmul = sum(self_time for key, self_time, _ in events if key in MATMUL_OPS) / total
    ranked = sorted(events, key=lambda event: -event[1])[:top]
    return matmul, [OpShare(op=key, share=self_time / total, calls=count) for key, self_time, count in ranked]


class PlainLoop:
    """The simplest correct loop: forward, first-sub-token gather, cross-entropy (under autocast below
    fp32), backward (through a gradient scaler for fp16), AdamW; one `epoch` at a time over the same batches."""

    def __init__(self, model: nn.Module, head: nn.Linear, batches: list, lr: float, device: torch.device, precision: str):
        self.model, self.head = model.to(device), head.to(device)
        self.batches, self.device, self.precision = batches, device, precision
        self.optimizer = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=lr)
        self.scaler = grad_scaler(precision, device)
        self.stepped = False

    def epoch(self, repeat: int) -> float:
        """Tokens/s of one pass over the batches (the loop's very first step, which allocates, untimed)."""
        self.model.train()
        tokens, started = 0, _clock(self.device)
        for batch in self.batches:
            batch = batch.to(self.device)
            with autocast(self.precision, self.device):
                states = self.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).last_hidden_state
                words = states.gather(1, batch.word_starts.unsqueeze(-1).expand(-1, -1, states.shape[-1]))
                loss = nn.functional.cross_entropy(self.head(words).flatten(0, 1), batch.labels.flatten(), ignore_index=-100)
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            if self.stepped:
                tokens += batch.real_tokens()
            else:  # the first step pays one-off allocation costs in both loops
                self.stepped, started = True, _clock(self.device)
        return tokens / (_clock(self.device) - started)


def trial_loop_epoch(session: Any) -> Callable[[int], float]:
    """Tokens/s of the trial loop's next epoch (`TrialSession.train_epoch`), from its own timings."""

    def epoch(repeat: int) -> float:
        tokens, seconds = session.timings.train_tokens, session.timings.train
        session.train_epoch(repeat + 1)
        return (session.timings.train_tokens - tokens) / (session.timings.train - seconds)

    return epoch


def _bench_config(encoder: str, sentences: int, batch_size: int, max_length: int, precision: str, repeats: int) -> TrialConfig:
    """The trial the benchmark trains: `sentences` of CoNLL-2003, one epoch per repeat and one more under the profiler."""
    return TrialConfig(
        dataset=DatasetRef(name="conll2003"),
        samplers=(Component(name="low_resource", params={"size": sentences, "partitions": 1}),),
        encoder=EncoderSettings(name=encoder, max_length=max_length),
        train=TrainSettings(epochs=repeats + 1, batch_size=batch_size, lr=5e-5, warmup_ratio=0.0, precision=precision),
        eval_split=None,
    )


def bench_train(
    encoder: str = "minilm-l6",
    sentences: int = 320,
    batch_size: int = 32,
    max_length: int = 128,
    threads: int | None = None,
    device: str = "cpu",
    precision: str = "fp32",
    repeats: int = DEFAULT_REPEATS,
) -> TrainBenchResult:
    repeats = check_repeats(repeats)
    on = bench_device(device)
    precision = bench_precision(precision, on)
    if threads:
        torch.set_num_threads(threads)
    config = _bench_config(encoder, sentences, batch_size, max_length, precision, repeats)
    session = TrialSession(config, device=on)
    session.setup()
    # The plain loop trains the encoder as loaded (the session's copy has nerplat's packed dropout)
    # on the batches of the session's first epoch.
    batches = list(iterate_batches(session.data.train, batch_size, seed=config.seed * 100_003 + 1))
    mean_length = float(sum(b.real_tokens() for b in batches) / sum(len(b.input_ids) for b in batches))
    encoder_model = load_encoder(config.encoder).model
    head = nn.Linear(encoder_model.config.hidden_size, len(session.data.labels))
    plain = PlainLoop(encoder_model, head, batches, lr=5e-5, device=on, precision=precision)
    dtype = AUTOCAST_DTYPES.get(precision, torch.float32)
    measured = interleaved(
        {
            "plain": plain.epoch,
            "nerplat": trial_loop_epoch(session),
            "peak": lambda repeat: matmul_gflops(device=on, dtype=dtype) * 1e9,
        },
        repeats,
    )
    flops = training_flops_per_token(encoder_model, mean_length)
    matmul, ops = op_breakdown(session, repeats + 1)
    peaks = measured["peak"]
    return TrainBenchResult(
        encoder=encoder,
        device=on.type,
        precision=precision,
        sentences=sentences,
        batches=len(batches),
        threads=torch.get_num_threads(),
        repeats=repeats,
        plain_tokens_per_s=Spread.of(measured["plain"]),
        nerplat_tokens_per_s=Spread.of(measured["nerplat"]),
        ratio=ratios(measured["nerplat"], measured["plain"]),
        matmul_gflops=Spread.of([peak / 1e9 for peak in peaks]),
        flops_per_token=flops,
        mfu=ratios([tokens * flops for tokens in measured["nerplat"]], peaks),
        plain_mfu=ratios([tokens * flops for tokens in measured["plain"]], peaks),
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        matmul_share=matmul,
        ops=ops,
    )
