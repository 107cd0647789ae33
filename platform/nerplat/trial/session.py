"""One trial as a session: `setup`, then `train_epoch` and `evaluate` per epoch, `save`/`restore`, `finish`.

Split the way torchtune splits its recipes, so each stage runs and is tested alone; `trial.loop.run_trial`
drives it. The session knows nothing of Ray Tune or MLflow. `TrialSession` is the `sequence_labelling`
variant's session (`trial.variant`): epochs of optimiser steps over word windows. Another variant that
trains the same way subclasses it with its own `featurize` (`trial.mrc_session`); the examples batch and
join themselves, so nothing here depends on which.

Early stopping (`train.early_stopping`, `trial.stopping`): each evaluation says whether the trial stops
there, `remaining_epochs` is empty after one that did, and `finish` records why training ended.

Model selection: `finish` scores the trial's evaluation split with the weights of the best dev
evaluation by `select_metric` (the spec's tune metric), or of the last epoch when the corpus has no
dev split. A session that nothing will read the weights from (`keep_weights=False`: a tuning trial,
with no evaluation split and no model to keep) copies none at its best evaluations: its selection is
by dev scores alone. Checkpoints hold plain data only (tensors, numbers, strings, lists, dicts) and are read
with `torch.load(weights_only=True)`, which refuses to unpickle anything else.

Device and arithmetic (`train.precision`: autocast, gradient scaler, pinned copies) are described in
`trial.device`.
"""

from __future__ import annotations

import math
import os
import pickle
import random
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, ClassVar, Protocol

import numpy as np
import torch
from torch import nn

from nerplat.errors import UserInputError
from nerplat.models.encoders import load_encoder
from nerplat.models.heads.ova import OneVsAllHead
from nerplat.models.packed_dropout import use_packed_dropout
from nerplat.models.tagger import Tagger, build_tagger, head_variant
from nerplat.objectives.base import Objective, ObjectiveContext
from nerplat.objectives.build import build_objective
from nerplat.optim import build_optimizer, clip_gradients, end_epoch
from nerplat.config.trial import TrialConfig
from nerplat.trial.batching import Batch
from nerplat.trial.data import TrialData, prepare_corpus, prepare_trial_data
from nerplat.trial.device import autocast, grad_scaler, refuse_fp16_off_cuda, trial_device
from nerplat.trial.features import featurize_windows
from nerplat.metrics import evaluate_tags
from nerplat.trial.precision_calibration import resolve_eval_precision, resolve_precision
from nerplat.trial.predict import Inference, evaluate_sentences
from nerplat.trial.results import Evaluation, Thresholds, Timings, TrainedTagger, TrialResult
from nerplat.trial.stopping import stopped_by
from nerplat.trial.thresholds import ScoredSentences, choose_thresholds, fixed_threshold_metrics
from nerplat.trial.variant import Examples, Featurize

CHECKPOINT_FILE = "trial_state.pt"
EVAL_BATCH_TOKENS = 8192  # sub-tokens of an evaluation batch at the encoder's max_length (see `setup`)


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


@dataclass(frozen=True)
class BestEvaluation:
    """The dev evaluation `finish` selects so far, with a CPU copy of the tagger's weights then."""

    epoch: int
    value: float  # of the selection metric
    metrics: dict[str, float]
    state: dict[str, torch.Tensor]  # empty when the session keeps no weights


class TrialSession:
    """The state of one trial between its stages; `epoch` is the last epoch trained (0 before any)."""

    variant: ClassVar[str] = "sequence_labelling"
    featurize: ClassVar[Featurize] = staticmethod(featurize_windows)

    def __init__(
        self,
        config: TrialConfig,
        *,
        select_metric: str = "micro_f1",
        progress: StepProgress | None = None,
        device: torch.device | None = None,
        keep_weights: bool = True,
    ):
        if head_variant(config.head) != self.variant:
            raise ValueError(
                f"head '{config.head.name}' trains as the '{head_variant(config.head)}' variant, not '{self.variant}': "
                "take its session from nerplat.trial.variant_registry.session_for"
            )
        self.config = config
        self.device = device or trial_device()
        threads = config.train.threads or torch.get_num_threads()  # `auto` made concrete, measured at these
        self.precision = resolve_precision(config.train.precision, self.device, threads)
        self.eval_precision = resolve_eval_precision(config.train.eval_precision, self.precision, self.device, threads)
        refuse_fp16_off_cuda(self.precision, self.device)
        refuse_fp16_off_cuda(self.eval_precision, self.device, "train.eval_precision")
        self.keep_weights = keep_weights
        self.select_metric = select_metric
        self.progress = progress
        self.timings = Timings()
        self.epoch = 0
        self.last_loss = math.nan
        self.steps = 0  # optimiser steps this trial has taken (counted on from a checkpoint's epoch)
        self.best: BestEvaluation | None = None
        self.evaluations: list[Evaluation] = []
        self._started = 0.0
        self._stepped = False  # an optimiser step was taken in this process

    # -- stages -----------------------------------------------------------------------------

    def setup(self) -> None:
        """Seeds, loads encoder and data, builds tagger, objective, optimiser and schedule."""
        config = self.config
        self._started = time.perf_counter()
        if config.train.threads:
            torch.set_num_threads(config.train.threads)
        seed_everything(config.seed)
        self.rank, self.world = _distributed()
        # Word-embedding encoders are made from the (sampled) training split; preparing it is memoised.
        train = prepare_corpus(config.dataset, config.samplers, seed=config.seed, partition=config.partition).corpus.train
        encoder = load_encoder(config.encoder, train=train, seed=config.seed)
        self.tokenizer = encoder.tokenizer
        self.data: TrialData = prepare_trial_data(config, encoder.tokenizer, self.featurize)
        self.tagger = build_tagger(encoder, config.head, self.data.labels)
        if self.device.type == "cpu":  # CUDA draws dropout masks in parallel already
            use_packed_dropout(self.tagger)
        if config.train.tune_threshold and not hasattr(self.tagger.head, "set_thresholds"):
            raise UserInputError(
                f"train.tune_threshold needs a head with decision thresholds (two_task), not '{config.head.name}'"
            )
        context = ObjectiveContext(
            labels=self.data.labels,
            label_counts=_train_label_counts(self.data.train, len(self.data.labels)),
            max_length=config.encoder.max_length,
            seed=config.seed,
        )
        self.objective = build_objective(config.objective.name, config.objective.params, context)
        if isinstance(self.tagger.head, OneVsAllHead):
            self.tagger.head.leave_out_untrained(context.label_counts)
        self.step_module = TrainingStep(self.tagger, self.objective).to(self.device)
        self.trained: nn.Module = self.step_module
        if self.world > 1:
            self.trained = nn.parallel.DistributedDataParallel(self.step_module, find_unused_parameters=True)
        self.batch_size = max(1, config.train.batch_size // self.world)
        self.inference = Inference.on(self.device, self.eval_precision, eval_batch_size(config))
        steps_per_epoch = -(-len(self.data.train) // self.batch_size)
        steps_per_epoch = -(-steps_per_epoch // self.world)
        steps_total = config.train.epochs * steps_per_epoch * self.objective.num_substeps
        self.optimizer, self.scheduler = build_optimizer(self.tagger, self.objective, config.train, steps_total=steps_total)
        self.scaler = grad_scaler(self.precision, self.device)

    @property
    def is_main_process(self) -> bool:
        """Rank 0 of a DDP trial (the only rank that shows step progress), or the single process."""
        return self.rank == 0

    def remaining_epochs(self) -> range:
        """The epochs left up to the cap; none once an evaluation stopped the trial (a restored one included)."""
        if self.evaluations and self.evaluations[-1].stopped_by is not None:
            return range(self.epoch + 1, self.epoch + 1)
        return range(self.epoch + 1, self.config.train.epochs + 1)

    def evaluates_after(self, epoch: int) -> bool:
        """Dev is scored every `train.eval_every` epochs and after the last one (never without dev)."""
        train = self.config.train
        return self.data.dev is not None and (epoch % train.eval_every == 0 or epoch == train.epochs)

    def train_epoch(self, epoch: int) -> float:
        """One pass over this rank's share of the epoch's batches; returns the last step's loss."""
        batches = list(self.data.train.batches(self.batch_size, seed=self.config.seed * 100_003 + epoch))
        batches = batches[self.rank :: self.world]
        reporting = self.progress is not None and self.is_main_process
        if reporting:
            self.progress.epoch_started(epoch, self.config.train.epochs, len(batches))
        self.trained.train()
        epoch_started = time.perf_counter()
        for batch in batches:
            batch = batch.to(self.device)
            loss = self._step(batch)
            if not self._stepped:
                # Start-up ends with the first optimiser step; throughput is counted from there.
                self.timings.setup = time.perf_counter() - self._started
                self.timings.first_step_unix = time.time()
                epoch_started = time.perf_counter()
                self._stepped = True
            else:
                self.timings.train_tokens += batch.real_tokens()
            self.last_loss = float(loss.detach())
            self.steps += 1
            if reporting:
                self.progress.step_done(self.last_loss)
        self.timings.train += time.perf_counter() - epoch_started
        end_epoch(self.optimizer, epoch - 1)  # the optimiser counts epochs from 0
        self.epoch = epoch
        return self.last_loss

    def evaluate(self) -> Evaluation:
        """Scores the dev subset after the last trained epoch; keeps the weights if they are the best, and
        says on the evaluation whether the trial stops here (`trial.stopping`)."""
        started = time.perf_counter()
        thresholds = None
        data = self.data
        if self.config.train.tune_threshold:  # one forward pass: the search and the scores decode it
            gold = [list(s.tags) for s in data.dev_sentences]
            scored = ScoredSentences(self.tagger, data.dev, self.inference)
            thresholds = Thresholds(*choose_thresholds(scored, gold, data.labels, self.select_metric))
            metrics = scored.metrics(gold, data.labels, thresholds.entity, thresholds.beginning)
        else:
            metrics, _ = evaluate_sentences(
                self.tagger, data.dev, data.dev_sentences, data.labels, self.inference
            )
        self.timings.evaluate += time.perf_counter() - started
        if self.best is None or metrics[self.select_metric] > self.best.value:
            weights = (
                {k: v.detach().to("cpu", copy=True) for k, v in self.tagger.state_dict().items()} if self.keep_weights else {}
            )
            self.best = BestEvaluation(self.epoch, metrics[self.select_metric], metrics, weights)
        values = [e.dev[self.select_metric] for e in self.evaluations] + [metrics[self.select_metric]]
        train = self.config.train
        evaluation = Evaluation(
            epoch=self.epoch,
            epochs=train.epochs,
            dev=metrics,
            dev_best=self.best.metrics,
            train_loss=self.last_loss,
            timings=replace(self.timings),
            thresholds=thresholds,
            stopped_by=stopped_by(values, train.early_stopping, self.epoch, train.epochs),
        )
        self.evaluations.append(evaluation)
        return evaluation

    def finish(self, keep_model: Callable[[TrainedTagger], None] | None = None) -> TrialResult:
        """Restores the selected weights, hands them to `keep_model`, and scores the evaluation split."""
        selected_epoch = self.config.train.epochs
        if self.best is not None:
            if self.best.state:
                self.tagger.load_state_dict(self.best.state)
            selected_epoch = self.best.epoch
        if keep_model is not None and self.is_main_process:
            self.tagger.eval()
            keep_model(TrainedTagger(tagger=self.tagger, tokenizer=self.tokenizer, labels=self.data.labels, config=self.config))
        data, split = self.data, self.config.eval_split
        metrics: dict[str, float] = {}
        predictions = []
        if data.eval is not None:
            started = time.perf_counter()
            if self.config.train.tune_threshold:  # the paper's fixed threshold beside the tuned one, from one forward pass
                gold = [list(s.tags) for s in data.eval_sentences]
                scored = ScoredSentences(self.tagger, data.eval, self.inference)
                entity, beginning = (round(t, 6) for t in self.tagger.head.threshold.tolist())  # the selected epoch's
                predicted = scored.tags(data.labels, entity, beginning)
                metrics = {f"{split}_{k}": v for k, v in evaluate_tags(gold, predicted).items()}
                metrics |= {f"{split}_threshold_entity": entity, f"{split}_threshold_beginning": beginning}
                metrics |= fixed_threshold_metrics(scored, self.config.head, gold, data.labels, split)
            else:
                final, predicted = evaluate_sentences(
                    self.tagger, data.eval, data.eval_sentences, data.labels, self.inference
                )
                metrics = {f"{split}_{k}": v for k, v in final.items()}
            self.timings.evaluate += time.perf_counter() - started
            predictions = [(s, tuple(p)) for s, p in zip(data.eval_sentences, predicted)]
        self.timings.total = time.perf_counter() - self._started
        return TrialResult(
            metrics=metrics,
            evaluations=list(self.evaluations),
            predictions=predictions,
            train_sentences=len(data.corpus.train),
            size_factor=data.size_factor,
            selected_epoch=selected_epoch,
            timings=self.timings,
            notes=data.corpus.notes,
            stopped_by="patience" if self.evaluations and self.evaluations[-1].stopped_by == "patience" else "cap",
            stopped_epoch=self.epoch,
            data_checksums=dict(data.corpus.checksums),
        )

    # -- checkpoints ------------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        """Writes what `restore` needs to continue after `epoch` (temp file, then `os.replace`)."""
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f".{CHECKPOINT_FILE}.tmp"
        state = {
            "step_module": self.step_module.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "grad_scaler": self.scaler.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "epoch": self.epoch,
            "best": None if self.best is None else vars(self.best),
            "evaluations": [e.to_dict() for e in self.evaluations],
        }
        torch.save(state, temporary)
        os.replace(temporary, directory / CHECKPOINT_FILE)

    def restore(self, directory: Path) -> bool:
        """Continues from the checkpoint in `directory`, if there is one; returns whether there was."""
        path = directory / CHECKPOINT_FILE
        if not path.is_file():
            return False
        state = load_checkpoint(path, self.device)
        self.step_module.load_state_dict(state["step_module"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.scaler.load_state_dict(state["grad_scaler"])
        torch.set_rng_state(state["torch_rng"])
        self.epoch = state["epoch"]
        self.best = None if state["best"] is None else BestEvaluation(**state["best"])
        self.evaluations = [Evaluation.from_dict(e) for e in state["evaluations"]]
        return True

    def _step(self, batch: Batch) -> torch.Tensor:
        for substep in range(self.objective.num_substeps):
            with autocast(self.precision, self.device):
                loss = self.trained(batch, substep)
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)  # clipping sees true gradients (a no-op unless fp16)
            clip_gradients(self.optimizer, self.config.train.max_grad_norm)
            self.scaler.step(self.optimizer)  # fp16: skipped when a gradient overflowed
            self.scaler.update()
            self.scheduler.step()
        return loss


def eval_batch_size(config: TrialConfig) -> int:
    """Windows per evaluation batch. Evaluation batches are sorted by length, so they pad little at any
    size: as many windows as fill `EVAL_BATCH_TOKENS` sub-tokens at the encoder's longest window, at
    least twice a training batch (and 32)."""
    return max(32, config.train.batch_size * 2, EVAL_BATCH_TOKENS // config.encoder.max_length)


def load_checkpoint(path: Path, device: torch.device) -> dict[str, Any]:
    """A checkpoint `TrialSession.save` wrote; anything holding pickled objects is refused."""
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as error:
        reason = str(error).strip().splitlines()[0]
        raise ValueError(
            f"checkpoint {path} holds objects other than tensors, numbers, strings, lists and dicts, so it was "
            f"not written by this trial loop; refusing to unpickle it ({reason})"
        ) from error


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _train_label_counts(features: Examples, num_labels: int) -> list[int]:
    return np.bincount(features.labels[features.labels >= 0], minlength=num_labels).tolist()


def _distributed() -> tuple[int, int]:
    """(rank, world size) when a torch process group is up (Ray Train sets one up), else (0, 1)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1
