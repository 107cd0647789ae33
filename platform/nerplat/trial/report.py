"""What a trial tells its caller: one `Evaluation` per dev evaluation, one `TrialResult` at the end.

The runner turns evaluations into Ray Tune reports and MLflow metrics; `nerplat train` prints them.
Plain data only, so results cross process boundaries unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from nerplat.data.corpus import Sentence


@dataclass(frozen=True)
class Evaluation:
    """Dev metrics after an epoch, with `dev_best_<name>` the best value so far for every name."""

    epoch: int
    epochs: int
    metrics: dict[str, float]


class Reporter(Protocol):
    def __call__(self, evaluation: Evaluation, save_checkpoint: Callable[[Path], None]) -> None:
        """Receives each evaluation; may call `save_checkpoint(directory)` to persist the trial."""


@dataclass
class Timings:
    """Seconds spent in each part of a trial, for `nerplat bench` and the trial's run record."""

    setup: float = 0.0  # from entering run_trial to the first optimiser step
    train: float = 0.0  # forward, backward and optimiser steps
    evaluate: float = 0.0
    total: float = 0.0
    train_tokens: int = 0  # real (non-padding) sub-tokens passed through training steps

    def tokens_per_second(self) -> float:
        return self.train_tokens / self.train if self.train else 0.0


@dataclass
class TrialResult:
    """Final metrics on the trial's evaluation split (keys `<split>_<name>`), and what produced them."""

    metrics: dict[str, float]
    evaluations: list[Evaluation]
    predictions: list[tuple[Sentence, tuple[str, ...]]]  # gold sentence, predicted tags
    train_sentences: int
    size_factor: float
    selected_epoch: int
    timings: Timings = field(default_factory=Timings)
    notes: tuple[str, ...] = ()  # what the corpus layer and samplers did (IOB1 conversion, carving, ...)
    data_checksums: dict[str, str] = field(default_factory=dict)  # split -> sha256 of what was used


@dataclass(frozen=True)
class TrainedTagger:
    """The selected weights at the end of a trial, for whoever keeps the model (`nerplat.serving`).

    Not plain data: it is handed over in-process (`run_trial(keep_model=...)`), never reported.
    """

    tagger: Any  # nerplat.models.tagger.Tagger, in eval mode, with the weights of the selected epoch
    tokenizer: Any  # the encoder's fast tokenizer
    labels: list[str]
    config: Any  # nerplat.plan.trial_config.TrialConfig: encoder settings and head
