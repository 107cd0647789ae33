"""`nerplat bench peer`: the bench sweep (`bench/sweep.yaml`) run both ways in one invocation, by
nerplat and by the peer a Hugging Face user would pick: `Trainer.hyperparameter_search` with the
Optuna backend, in-process.

Both sides get the same problem. The training sentences are the sweep's low-resource sample and the
dev sentences its fixed dev subset, both made by nerplat's data layer; the inputs are nerplat's
sub-token windows (tokenizer, `max_length`, a word's label on its first sub-token); the network is
the same encoder (the same weights, read by nerplat's encoder loader) under a linear token
classifier with dropout 0.1; dev is scored every `eval_every` epochs and after the last, with
seqeval's strict micro F1 through `nerplat.metrics`. Both try the same learning rates: nerplat
draws them log-uniformly at random over the sweep's range, and the peer's Optuna study tries
exactly those (a grid sampler over nerplat's draws), so the best dev scores differ by how each side
trains, not by the luck of two random searches. Both use the sweep's batch size, epochs, AdamW
weight decay, warm-up share, linear decay and gradient clipping.

Each side runs in its best configuration for the machine: one trial at a time on every core
(`threads`, default all CPUs). On CPU one trial already keeps every core busy and fp32 is the
fastest arithmetic where the CPU has no bf16 units (there bf16 autocast is emulated and slower:
docs/performance.md, "Figures behind the code's choices"). nerplat runs its sweep with `train.threads`
and `resources.cpus_per_worker` set to the threads; the peer sets torch's threads, batches by length
(`group_by_length`: megabatches of at most a quarter of the windows sorted by length, as nerplat's
length groups are), loads data in the main process, and saves no checkpoints and logs to nothing.
Both evaluate in the arithmetic of nerplat's trials (`train.eval_precision`, resolved on this
machine): under bf16 autocast the peer's evaluation steps run as nerplat's do, logits read in fp32.

Figures per side: wall time of the whole sweep, per-trial time (wall / trials), the best dev micro F1
of any evaluation of any trial; and the ratio peer wall / nerplat wall (above 1: nerplat is faster).
Each side's sweep runs as a Python process of its own, timed from before that process starts to its
exit (`bench.side_process`): what a user waits for from typing `nerplat run SPEC --tune-only`, or
`python sweep.py` for the hand-written peer, to its end. Both clocks hold the side's interpreter
start, imports, set-up (nerplat's: the spec checked and its corpus read, Ray's start; the peer's: its
data and Trainer) and teardown.

Repeats (`bench.repeats`): the two sweeps run in turns, nerplat, peer, nerplat, peer, ... `repeats`
times (at least 5), each repeat's peer trying the learning rates of that repeat's nerplat sweep;
every figure is the median (min-max) of the repeats, the ratio and the best-dev difference taken
within each repeat. Repeat r trains both sides with the seed `TUNE_SEED - r` (the first repeat
with the tuning trials' own seed): each side is deterministic at a seed, so repeats at one seed
would give the same best dev scores and say nothing of how far another seed moves them; at r
seeds, a side's best-dev spread is that seed noise, against which the difference is read. Five
repeats of the 20-trial sweep take over half an hour on two cores, so each repeat's sweeps run
`DEFAULT_TRIALS` trials unless `trials` is given (`--trials 20`: the full sweep); Ray's start and
each side's set-up weigh more in a shorter sweep.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Any

from rich.console import Console

from nerplat.bench.repeats import DEFAULT_REPEATS, Spread, check_repeats, interleaved, ratios
from nerplat.bench.runner_overhead import SWEEP_SPEC, run_sweep
from nerplat.bench.side_process import timed_call
from nerplat.catalog import default_catalog
from nerplat.config.experiment import TUNE_SEED
from nerplat.errors import UserInputError
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource, default_dataset_check
from nerplat.track import schema

BEST_DEV = "dev_best_micro_f1"  # a nerplat trial's best dev evaluation by the sweep's metric
DEFAULT_TRIALS = 4  # trials of each side's sweep in a repeat, unless given


@dataclass
class SweepFigures:
    """One side's sweep in one repeat."""

    name: str
    trials: int
    wall_s: float
    best_dev_micro_f1: float
    learning_rates: list[float]  # the values its trials tried, ascending
    seed: int  # every trial's training seed


@dataclass
class SideFigures:
    """One side over the repeats."""

    name: str
    wall_s: Spread
    per_trial_s: Spread
    best_dev_micro_f1: Spread
    learning_rates: list[list[float]]  # per repeat
    seeds: list[int]  # per repeat

    @classmethod
    def of(cls, sweeps: list[SweepFigures]) -> SideFigures:
        return cls(
            name=sweeps[0].name,
            wall_s=Spread.of([sweep.wall_s for sweep in sweeps]),
            per_trial_s=Spread.of([sweep.wall_s / sweep.trials for sweep in sweeps]),
            best_dev_micro_f1=Spread.of([sweep.best_dev_micro_f1 for sweep in sweeps]),
            learning_rates=[sweep.learning_rates for sweep in sweeps],
            seeds=[sweep.seed for sweep in sweeps],
        )


@dataclass
class PeerBenchResult:
    trials: int  # of each side's sweep in each repeat
    epochs: int
    sentences: int
    encoder: str
    threads: int
    repeats: int
    nerplat: SideFigures
    peer: SideFigures
    ratio: Spread  # peer wall / nerplat wall per repeat: above 1, nerplat is faster
    best_dev_difference: Spread  # nerplat's best dev micro F1 minus the peer's, per repeat

    @property
    def same_learning_rates(self) -> bool:
        """Whether in every repeat the peer tried exactly the learning rates nerplat drew."""
        return self.nerplat.learning_rates == self.peer.learning_rates

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"same_learning_rates": self.same_learning_rates}


def bench_peer(
    console: Console,
    trials: int | None = None,
    epochs: int | None = None,
    sentences: int | None = None,
    encoder: str | None = None,
    threads: int | None = None,
    repeats: int = DEFAULT_REPEATS,
) -> PeerBenchResult:
    """The sweep, shrunk by whichever of trials, epochs, training sentences and encoder are given,
    run by each side in turns `repeats` times."""
    repeats = check_repeats(repeats)
    _require_accelerate()
    threads = threads or os.cpu_count() or 1
    trials = trials or DEFAULT_TRIALS
    overrides = [f"train.threads={threads}", f"resources.cpus_per_worker={threads}", f"tune.num_samples={trials}"]
    if epochs is not None:
        overrides.append(f"train.epochs={epochs}")
    if sentences is not None:
        overrides.append(f"samplers=[{{low_resource: {{size: {sentences}, partitions: 1}}}}]")
    if encoder is not None:
        overrides.append(f"model.encoder={encoder}")
    plan = compile_plan(SpecSource(SWEEP_SPEC, overrides=overrides), default_catalog())
    arm = plan.arms[0]
    drawn: list[float] = []  # the learning rates of the current repeat's nerplat sweep

    def nerplat_side(repeat: int) -> SweepFigures:
        seed = repeat_seed(repeat)
        trials = f"{arm.tune_trials} trials at seed {seed}"
        console.print(f"repeat {repeat + 1}/{repeats}, nerplat: {trials}, one at a time on {threads} threads ...")
        wall, answer = timed_call(f"{__name__}:nerplat_sweep", {"overrides": overrides, "seed": seed})
        drawn[:] = answer["learning_rates"]
        return SweepFigures("nerplat", arm.tune_trials, wall, answer["best_dev_micro_f1"], answer["learning_rates"], seed)

    def peer_side(repeat: int) -> SweepFigures:
        seed = repeat_seed(repeat)
        console.print(
            f"repeat {repeat + 1}/{repeats}, Hugging Face Trainer + Optuna: {arm.tune_trials} trials at seed {seed}, "
            f"in one process on {threads} threads ..."
        )
        request = {"arm": arm.model_dump(mode="json"), "threads": threads, "learning_rates": list(drawn), "seed": seed}
        wall, answer = timed_call("nerplat.bench.hf_peer:hf_optuna_sweep", request)
        name = "Hugging Face Trainer + Optuna"
        return SweepFigures(name, len(drawn), wall, answer["best_dev_micro_f1"], answer["learning_rates"], seed)

    sweeps = interleaved({"nerplat": nerplat_side, "peer": peer_side}, repeats)
    nerplat, peer = sweeps["nerplat"], sweeps["peer"]
    return PeerBenchResult(
        trials=arm.tune_trials,
        epochs=arm.fixed["train"]["epochs"],
        sentences=arm.fixed["samplers"][0]["params"]["size"],
        encoder=arm.fixed["encoder"]["name"],
        threads=threads,
        repeats=repeats,
        nerplat=SideFigures.of(nerplat),
        peer=SideFigures.of(peer),
        ratio=ratios([sweep.wall_s for sweep in peer], [sweep.wall_s for sweep in nerplat]),
        best_dev_difference=Spread.of([ours.best_dev_micro_f1 - theirs.best_dev_micro_f1 for ours, theirs in zip(nerplat, peer)]),
    )


def repeat_seed(repeat: int) -> int:
    """Both sides' training seed in the 0-based `repeat`: the tuning trials' seed, then the seeds below it."""
    return TUNE_SEED - repeat


def nerplat_sweep(overrides: list[str], seed: int) -> dict[str, Any]:
    """nerplat's side, in a process of its own: what `nerplat run SWEEP_SPEC --tune-only` with `overrides`
    does (the spec checked and its corpora read, then the tune phase on an embedded Ray that ends with
    the process), its trials training at `seed`; its best dev micro F1 and the learning rates it drew.
    Its progress goes to stderr, as the bench's console may be writing JSON to stdout."""
    plan = compile_plan(SpecSource(SWEEP_SPEC, overrides=overrides), default_catalog(), default_dataset_check())
    plan = plan.model_copy(update={"tune": plan.tune.model_copy(update={"train_seed": seed})})
    arm = plan.arms[0]
    sweep = run_sweep(plan, Console(emoji=False, stderr=True))
    scores = [run.data.metrics[BEST_DEV] for run in sweep.trials if BEST_DEV in run.data.metrics]
    if len(scores) < arm.tune_trials:
        raise RuntimeError(f"nerplat's sweep scored {len(scores)} of {arm.tune_trials} trials (its messages are above)")
    (key,) = arm.search_space
    drawn = sorted(json.loads(run.data.tags[schema.SAMPLED])[key] for run in sweep.trials)
    (recorded,) = {int(run.data.tags[schema.SEED]) for run in sweep.trials}
    if recorded != seed:
        raise RuntimeError(f"nerplat's trials recorded seed {recorded}, not the repeat's {seed}")
    return {"best_dev_micro_f1": max(scores), "learning_rates": drawn}


def _require_accelerate() -> None:
    """The Trainer needs accelerate (the bench extra): refused before nerplat's half runs."""
    import importlib.util

    if importlib.util.find_spec("accelerate") is None:
        raise UserInputError("nerplat bench peer needs accelerate for the Hugging Face Trainer: pip install 'nerplat[bench]'")
