"""One trial, in-process: corpus -> samplers -> features -> tagger + objective -> train -> evaluate.

`run_trial(config)` is what `nerplat train` runs directly and what every Ray trial runs inside its
worker. It knows nothing of Ray Tune or MLflow: it reports each dev evaluation through the
`Reporter` the caller passes, and resumes from a directory that reporter asked it to save.

Model selection: the final evaluation uses the weights of the best dev evaluation by
`select_metric` (the spec's tune metric), or the last epoch when the corpus has no dev split.
The dev subset (`train.dev_subset`) is drawn with a fixed seed, the same for every trial and
replicate, so tuning compares configurations on the same sentences.
"""

from __future__ import annotations

import copy
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

import numpy as np
import torch
from torch import nn

from nerplat.data.corpus import Corpus, Sentence
from nerplat.errors import UserInputError
from nerplat.metrics import evaluate_tags
from nerplat.models.encoders import load_encoder
from nerplat.models.tagger import Tagger, build_tagger
from nerplat.objectives.base import Objective, ObjectiveContext
from nerplat.objectives.build import build_objective
from nerplat.optim import build_optimizer, clip_gradients, end_epoch
from nerplat.plan.trial_config import TrialConfig
from nerplat.trial.batching import Batch, ids_to_tags, iterate_batches, join_windows
from nerplat.trial.data import prepare_corpus
from nerplat.trial.features import WindowFeatures, featurize
from nerplat.trial.report import Evaluation, Reporter, Timings, TrainedTagger, TrialResult
from nerplat.trial.thresholds import choose_thresholds

DEV_SUBSET_SEED = 0
CHECKPOINT_FILE = "trial_state.pt"


class StepProgress(Protocol):
    """Optional progress sink (`nerplat train` draws a bar with it)."""

    def epoch_started(self, epoch: int, epochs: int, steps: int) -> None: ...

    def step_done(self, loss: float) -> None: ...


class TrainingStep(nn.Module):
    """Model and objective as one module, so DDP synchronises loss state (AUC a, b, alpha) too."""

    def __init__(self, tagger: Tagger, objective: Objective):
        super().__init__()
        self.tagger = tagger
        self.objective = objective

    def forward(self, batch: Batch, substep: int) -> torch.Tensor:
        return self.objective(self.tagger(batch), batch.labels, substep)


@dataclass
class _Prepared:
    corpus: Corpus
    size_factor: float
    labels: list[str]
    train: WindowFeatures
    dev: WindowFeatures | None
    dev_sentences: tuple[Sentence, ...] | None
    eval: WindowFeatures | None
    eval_sentences: tuple[Sentence, ...] | None


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _dev_subset(sentences: tuple[Sentence, ...], size: int | None) -> tuple[Sentence, ...]:
    if size is None or size >= len(sentences):
        return sentences
    chosen = np.random.default_rng(DEV_SUBSET_SEED).choice(len(sentences), size=size, replace=False)
    return tuple(sentences[i] for i in sorted(chosen))


def _prepare(config: TrialConfig, tokenizer: object) -> _Prepared:
    prepared = prepare_corpus(config.dataset, config.samplers, seed=config.seed, partition=config.partition)
    corpus, labels = prepared.corpus, prepared.corpus.labels()

    def features(sentences: tuple[Sentence, ...] | None) -> WindowFeatures | None:
        return None if sentences is None else featurize(sentences, tokenizer, config.encoder, labels)

    dev_sentences = None if corpus.dev is None else _dev_subset(corpus.dev, config.train.dev_subset)
    eval_sentences = {"dev": corpus.dev, "test": corpus.test, None: None}[config.eval_split]
    return _Prepared(
        corpus=corpus,
        size_factor=prepared.size_factor,
        labels=labels,
        train=features(corpus.train),
        dev=features(dev_sentences),
        dev_sentences=dev_sentences,
        eval=features(eval_sentences),
        eval_sentences=eval_sentences,
    )


def predict(tagger: Tagger, features: WindowFeatures, batch_size: int, device: torch.device) -> list[list[int]]:
    """Label ids per sentence for every sentence of `features`."""
    tagger.eval()
    windows: list[int] = []
    predictions: list[list[int]] = []
    with torch.inference_mode():
        for batch in iterate_batches(features, batch_size, seed=None):
            predictions += tagger.decode(tagger(batch.to(device)))
            windows += batch.windows.tolist()
    return join_windows(features, windows, predictions)


def evaluate(
    tagger: Tagger, features: WindowFeatures, sentences: tuple[Sentence, ...], labels: list[str], batch_size: int, device: torch.device
) -> tuple[dict[str, float], list[list[str]]]:
    predicted = ids_to_tags(predict(tagger, features, batch_size, device), labels)
    return evaluate_tags([list(s.tags) for s in sentences], predicted), predicted


def _train_label_counts(features: WindowFeatures, num_labels: int) -> list[int]:
    return np.bincount(features.labels[features.labels >= 0], minlength=num_labels).tolist()


def _distributed() -> tuple[int, int]:
    """(rank, world size) when a torch process group is up (Ray Train sets one up), else (0, 1)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def _device() -> torch.device:
    if torch.cuda.is_available():
        rank = int(os.environ.get("LOCAL_RANK", 0))
        return torch.device("cuda", rank % torch.cuda.device_count())
    return torch.device("cpu")


def run_trial(
    config: TrialConfig,
    *,
    report: Reporter | None = None,
    resume_from: Path | None = None,
    progress: StepProgress | None = None,
    select_metric: str = "micro_f1",
    keep_model: Callable[[TrainedTagger], None] | None = None,
) -> TrialResult:
    """Train and evaluate one configuration; see the module docstring for selection and resume.

    `keep_model` receives the tagger with the selected weights (rank 0 only), e.g. to log it.
    """
    started = time.perf_counter()
    timings = Timings()
    if config.train.threads:
        torch.set_num_threads(config.train.threads)
    seed_everything(config.seed)
    rank, world = _distributed()
    device = _device()

    encoder = load_encoder(config.encoder)
    data = _prepare(config, encoder.tokenizer)
    tagger = build_tagger(encoder, config.head, data.labels)
    if config.train.tune_threshold and not hasattr(tagger.head, "set_thresholds"):
        raise UserInputError(
            f"train.tune_threshold needs a head with decision thresholds (two_task), not '{config.head.name}'"
        )
    context = ObjectiveContext(
        labels=data.labels,
        label_counts=_train_label_counts(data.train, len(data.labels)),
        max_length=config.encoder.max_length,
        seed=config.seed,
    )
    objective = build_objective(config.objective.name, config.objective.params, context)
    step_module = TrainingStep(tagger, objective).to(device)
    trained: nn.Module = step_module
    if world > 1:
        trained = nn.parallel.DistributedDataParallel(step_module, find_unused_parameters=True)

    batch_size = max(1, config.train.batch_size // world)
    steps_per_epoch = -(-len(data.train) // batch_size)
    steps_per_epoch = -(-steps_per_epoch // world)
    optimizer, scheduler = build_optimizer(
        tagger, objective, config.train, steps_total=config.train.epochs * steps_per_epoch * objective.num_substeps
    )

    epoch0, best_value, best_metrics, best_state, evaluations = 1, None, None, None, []
    if resume_from is not None and (resume_from / CHECKPOINT_FILE).is_file():
        state = torch.load(resume_from / CHECKPOINT_FILE, map_location=device, weights_only=False)
        step_module.load_state_dict(state["step_module"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        epoch0, best_value, best_state = state["epoch"] + 1, state["best_value"], state["best_state"]
        best_metrics = state["best_metrics"]
        evaluations = [Evaluation(**e) for e in state["evaluations"]]

    def save_checkpoint(directory: Path, epoch: int) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f".{CHECKPOINT_FILE}.tmp"
        torch.save(
            {
                "step_module": step_module.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "torch_rng": torch.get_rng_state(),
                "epoch": epoch,
                "best_value": best_value,
                "best_metrics": best_metrics,
                "best_state": best_state,
                "evaluations": [e.__dict__ for e in evaluations],
            },
            temporary,
        )
        os.replace(temporary, directory / CHECKPOINT_FILE)

    eval_batch = max(32, config.train.batch_size * 2)
    first_step_done, first_step_unix = False, 0.0
    for epoch in range(epoch0, config.train.epochs + 1):
        trained.train()
        batches = list(iterate_batches(data.train, batch_size, seed=config.seed * 100_003 + epoch))
        batches = batches[rank::world]
        if progress is not None and rank == 0:
            progress.epoch_started(epoch, config.train.epochs, len(batches))
        epoch_started = time.perf_counter()
        for batch in batches:
            batch = batch.to(device)
            for substep in range(objective.num_substeps):
                loss = trained(batch, substep)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                clip_gradients(optimizer, config.train.max_grad_norm)
                optimizer.step()
                scheduler.step()
            if not first_step_done:
                # Start-up ends with the first optimiser step; throughput is counted from there.
                timings.setup = time.perf_counter() - started
                first_step_unix = time.time()
                epoch_started = time.perf_counter()
                first_step_done = True
            else:
                timings.train_tokens += batch.real_tokens()
            if progress is not None and rank == 0:
                progress.step_done(float(loss.detach()))
        timings.train += time.perf_counter() - epoch_started
        end_epoch(optimizer, epoch - 1)  # the optimiser counts epochs from 0

        if data.dev is None or not (epoch % config.train.eval_every == 0 or epoch == config.train.epochs):
            continue
        eval_started = time.perf_counter()
        thresholds = {}
        if config.train.tune_threshold:
            gold = [list(s.tags) for s in data.dev_sentences]
            chosen = choose_thresholds(tagger, data.dev, gold, data.labels, eval_batch, device, select_metric)
            thresholds = {"threshold_entity": chosen[0], "threshold_beginning": chosen[1]}
        metrics, _ = evaluate(tagger, data.dev, data.dev_sentences, data.labels, eval_batch, device)
        timings.evaluate += time.perf_counter() - eval_started
        if best_value is None or metrics[select_metric] > best_value:
            best_value, best_metrics = metrics[select_metric], metrics
            best_state = {k: v.detach().to("cpu", copy=True) for k, v in tagger.state_dict().items()}
        reported = {f"dev_{k}": v for k, v in metrics.items()}
        reported |= {f"dev_best_{k}": v for k, v in best_metrics.items()}
        reported["train_loss"] = float(loss.detach())
        reported |= thresholds
        # Cumulative timings, for `nerplat bench run` and the trial's MLflow record.
        reported |= {
            "time_setup_s": timings.setup,
            "time_train_s": timings.train,
            "time_eval_s": timings.evaluate,
            "time_first_step_unix": first_step_unix,
            "train_tokens": float(timings.train_tokens),
        }
        evaluation = Evaluation(epoch=epoch, epochs=config.train.epochs, metrics=reported)
        evaluations.append(evaluation)
        if report is not None and rank == 0:
            report(evaluation, lambda directory, e=epoch: save_checkpoint(directory, e))

    selected_epoch = config.train.epochs
    if best_state is not None:
        tagger.load_state_dict(best_state)
        selected_epoch = next(e.epoch for e in evaluations if e.metrics[f"dev_{select_metric}"] == best_value)
    if keep_model is not None and rank == 0:
        tagger.eval()
        keep_model(TrainedTagger(tagger=tagger, tokenizer=encoder.tokenizer, labels=data.labels, config=config))
    metrics: dict[str, float] = {}
    predictions: list[tuple[Sentence, tuple[str, ...]]] = []
    if data.eval is not None:
        eval_started = time.perf_counter()
        final, predicted = evaluate(tagger, data.eval, data.eval_sentences, data.labels, eval_batch, device)
        timings.evaluate += time.perf_counter() - eval_started
        metrics = {f"{config.eval_split}_{k}": v for k, v in final.items()}
        predictions = [(s, tuple(p)) for s, p in zip(data.eval_sentences, predicted)]
    timings.total = time.perf_counter() - started
    return TrialResult(
        metrics=metrics,
        evaluations=evaluations,
        predictions=predictions,
        train_sentences=len(data.corpus.train),
        size_factor=data.size_factor,
        selected_epoch=selected_epoch,
        timings=timings,
        notes=data.corpus.notes,
        data_checksums=dict(data.corpus.checksums),
    )
