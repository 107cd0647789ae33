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

Figures per side: wall time of the whole sweep (nerplat's with Ray's start, the peer's with its data
and Trainer set-up), per-trial time (wall / trials), the best dev micro F1 of any evaluation of any
trial; and the ratio peer wall / nerplat wall (above 1: nerplat is faster).

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
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from rich.console import Console

from nerplat.bench.repeats import DEFAULT_REPEATS, Spread, check_repeats, interleaved, ratios
from nerplat.bench.runner_overhead import SWEEP_SPEC, run_sweep
from nerplat.catalog import default_catalog
from nerplat.config.experiment import TUNE_SEED
from nerplat.errors import UserInputError
from nerplat.metrics import evaluate_tags
from nerplat.models.encoders import load_encoder, quiet_transformers
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource
from nerplat.track import schema
from nerplat.trial.batching import ids_to_tags, join_windows
from nerplat.trial.data import prepare_trial_data
from nerplat.trial.device import autocast
from nerplat.trial.features import featurize_windows
from nerplat.trial.precision_calibration import resolve_eval_precision, resolve_precision

PEER_SEARCH_SEED = 0  # the order in which Optuna's grid sampler visits nerplat's learning rates
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
        figures = nerplat_sweep(plan.model_copy(update={"tune": plan.tune.model_copy(update={"train_seed": seed})}), console)
        drawn[:] = figures.learning_rates
        return figures

    def peer_side(repeat: int) -> SweepFigures:
        seed = repeat_seed(repeat)
        console.print(
            f"repeat {repeat + 1}/{repeats}, Hugging Face Trainer + Optuna: {arm.tune_trials} trials at seed {seed}, "
            f"in-process on {threads} threads ..."
        )
        return hf_optuna_sweep(arm, threads, list(drawn), seed)

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


def nerplat_sweep(plan: Any, console: Console) -> SweepFigures:
    """nerplat's side once: the sweep through `nerplat run`'s runner, Ray's start included, then Ray stopped."""
    arm = plan.arms[0]
    sweep = run_sweep(plan, console)
    _stop_ray()
    scores = [run.data.metrics[BEST_DEV] for run in sweep.trials if BEST_DEV in run.data.metrics]
    if len(scores) < arm.tune_trials:
        raise RuntimeError(f"nerplat's sweep scored {len(scores)} of {arm.tune_trials} trials (its messages are above)")
    (key,) = arm.search_space
    drawn = sorted(json.loads(run.data.tags[schema.SAMPLED])[key] for run in sweep.trials)
    (seed,) = {int(run.data.tags[schema.SEED]) for run in sweep.trials}  # as the trials recorded it
    return SweepFigures("nerplat", arm.tune_trials, sweep.command_s, max(scores), drawn, seed)


def hf_optuna_sweep(arm: Any, threads: int, learning_rates: list[float], seed: int) -> SweepFigures:
    """`Trainer.hyperparameter_search(backend="optuna")` trying each of `learning_rates` once, training at
    `seed`, on the data and encoder of the arm's tuning trials; the wall time counts from data preparation
    to the last trial."""
    import torch
    from transformers import DataCollatorForTokenClassification
    from transformers.trainer_callback import PrinterCallback

    (key, space), = arm.search_space.items()
    config = arm.trial_config({key: space.low}, seed=seed, eval_split=None)
    train = config.train
    cpu = torch.device("cpu")
    trained_in = resolve_precision(train.precision, cpu, threads)
    eval_precision = resolve_eval_precision(train.eval_precision, trained_in, cpu, threads)
    started = time.perf_counter()
    torch.set_num_threads(threads)
    encoder = load_encoder(config.encoder)
    data = prepare_trial_data(config, encoder.tokenizer, featurize_windows)
    gold = [list(sentence.tags) for sentence in data.dev_sentences]
    scores: list[float] = []
    tried: set[float] = set()

    def hp_space(trial: Any) -> dict[str, float]:
        learning_rate = trial.suggest_float("learning_rate", space.low, space.high, log=True)
        tried.add(learning_rate)
        return {"learning_rate": learning_rate}

    window_of = WindowLookup(data.dev)

    def compute_metrics(prediction: Any) -> dict[str, float]:
        windows = window_of.rows(prediction.inputs)  # length grouping reorders the dev windows
        words = [
            logits[labels != -100].argmax(-1).tolist() for logits, labels in zip(prediction.predictions, prediction.label_ids)
        ]
        predicted = ids_to_tags(join_windows(data.dev, windows, words), data.labels)
        micro_f1 = evaluate_tags(gold, predicted)["micro_f1"]
        scores.append(micro_f1)
        return {"micro_f1": micro_f1}

    with tempfile.TemporaryDirectory(prefix="nerplat-bench-peer-") as scratch:
        trainer = evaluating_in(eval_precision)(
            model_init=partial(_token_classifier, config, encoder, len(data.labels)),
            args=_training_arguments(scratch, config),
            train_dataset=window_dataset(data.train),
            eval_dataset=window_dataset(data.dev),
            data_collator=DataCollatorForTokenClassification(encoder.tokenizer),
            compute_metrics=compute_metrics,
            callbacks=[evaluate_every(train.eval_every, train.epochs)],
        )
        trainer.remove_callback(PrinterCallback)  # it prints every log line when progress bars are off
        _grid_search(trainer, hp_space, learning_rates)
    wall = time.perf_counter() - started
    return SweepFigures("Hugging Face Trainer + Optuna", len(learning_rates), wall, max(scores), sorted(tried), seed)


def _grid_search(trainer: Any, hp_space: Callable[[Any], dict[str, float]], learning_rates: list[float]) -> None:
    """Optuna's grid over `learning_rates`, each tried once, maximising dev micro F1."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with quiet_transformers():
        trainer.hyperparameter_search(
            hp_space=hp_space,
            compute_objective=lambda metrics: metrics["eval_micro_f1"],
            n_trials=len(learning_rates),
            direction="maximize",
            backend="optuna",
            sampler=optuna.samplers.GridSampler({"learning_rate": learning_rates}, seed=PEER_SEARCH_SEED),
            pruner=optuna.pruners.NopPruner(),  # the sweep's scheduler is FIFO: no trial is stopped early
        )


def _token_classifier(config: Any, encoder: Any, labels: int) -> Any:
    """The encoder a nerplat trial starts from, under transformers' token-classification head."""
    from transformers import AutoModelForTokenClassification

    model_config = encoder.model.config
    model_config.num_labels = labels
    with quiet_transformers():
        model = AutoModelForTokenClassification.from_config(model_config)
    model.base_model.load_state_dict(load_encoder(config.encoder).model.state_dict())
    return model


def _training_arguments(scratch: str, config: Any) -> Any:
    """The Trainer's settings: the trial's training batch, schedule and seed; evaluation batches of a
    training batch's size, grouped by length. nerplat cuts its own by padded size
    (`models.length_cut.cheapest_cut` under `trial.predict.CPU_EVAL_BATCH_TOKENS`); on the sweep's
    dev sentences the two take about the same time (docs/performance.md, "Figures behind the code's
    choices")."""
    import torch
    from transformers import TrainingArguments

    train = config.train
    return TrainingArguments(
        output_dir=scratch,
        per_device_train_batch_size=train.batch_size,
        per_device_eval_batch_size=train.batch_size,
        num_train_epochs=train.epochs,
        weight_decay=train.weight_decay,
        warmup_steps=train.warmup_ratio,  # a float below 1 is a share of the steps
        lr_scheduler_type="linear",
        max_grad_norm=train.max_grad_norm,
        train_sampling_strategy="group_by_length",
        eval_strategy="no",  # `EvaluateEvery` asks for the sweep's evaluations
        include_for_metrics=["inputs"],  # to find each evaluated window (`WindowLookup`)
        save_strategy="no",
        logging_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),  # pinning is for copies to a GPU
        seed=config.seed,
    )


def evaluating_in(precision: str) -> type:
    """The Trainer, its evaluation steps under autocast at `precision` (fp32: the Trainer as it is)
    and their logits handed on in fp32 (numpy has no bf16)."""
    import torch
    from transformers import Trainer

    if precision == "fp32":
        return Trainer

    class AutocastEvaluation(Trainer):
        def prediction_step(self, model: Any, inputs: Any, prediction_loss_only: bool, ignore_keys: Any = None) -> Any:
            with autocast(precision, torch.device(self.args.device.type)):
                loss, logits, labels = super().prediction_step(model, inputs, prediction_loss_only, ignore_keys)
            return loss, None if logits is None else logits.float(), labels

    return AutocastEvaluation


def window_dataset(features: Any) -> list[dict[str, Any]]:
    """nerplat's windows as token-classification examples: a word's label on its first sub-token,
    -100 (ignored) on the other sub-tokens and on context words another window owns."""
    examples = []
    for index in range(len(features)):
        window = features.window(index)
        labels = [-100] * len(window.input_ids)
        for start, label in zip(window.word_starts.tolist(), window.labels.tolist()):
            labels[start] = label
        examples.append({"input_ids": window.input_ids.tolist(), "labels": labels})
    return examples


class WindowLookup:
    """Which window of `features` each evaluated row is, from its input ids.

    `group_by_length` orders evaluation batches by length too, and the Trainer hands
    `compute_metrics` rows in that order. Rows come padded: with the pad id inside a batch, with
    -100 where batches were joined; a window never ends with the pad id (it ends with [SEP]).
    Identical windows are told apart by order, which is harmless: their predictions are the same.
    """

    def __init__(self, features: Any):
        self.pad_id = int(features.pad_id)
        self.indices: dict[tuple[int, ...], list[int]] = {}
        for index in range(len(features)):
            self.indices.setdefault(tuple(features.window(index).input_ids.tolist()), []).append(index)

    def rows(self, inputs: Any) -> list[int]:
        unclaimed = {ids: list(indices) for ids, indices in self.indices.items()}
        windows = []
        for row in inputs:
            ids = [int(i) for i in row]
            while ids and ids[-1] in (-100, self.pad_id):
                ids.pop()
            windows.append(unclaimed[tuple(ids)].pop(0))
        return windows


def evaluate_every(every: int, epochs: int) -> Any:
    """A Trainer callback that evaluates when a nerplat trial does: every `every` epochs and after the last."""
    from transformers import TrainerCallback

    class EvaluateEvery(TrainerCallback):
        def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            epoch = round(state.epoch)
            control.should_evaluate = epoch % every == 0 or epoch == epochs
            return control

    return EvaluateEvery()


def _require_accelerate() -> None:
    """The Trainer needs accelerate (the bench extra): refused before nerplat's half runs."""
    import importlib.util

    if importlib.util.find_spec("accelerate") is None:
        raise UserInputError("nerplat bench peer needs accelerate for the Hugging Face Trainer: pip install 'nerplat[bench]'")


def _stop_ray() -> None:
    """The embedded Ray nerplat started would otherwise keep its processes beside the peer's sweep."""
    import ray

    ray.shutdown()
