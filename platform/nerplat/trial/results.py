"""What a trial tells its caller: one `Evaluation` per dev evaluation, one `TrialResult` at the end.

The runner turns evaluations into Ray Tune reports and MLflow metrics; `nerplat train` prints them.
Both are plain data with `to_dict`/`from_dict`, so they cross process boundaries (Tune results) and
go into checkpoints that `torch.load(weights_only=True)` reads: dicts, lists, strings and numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from nerplat.data.corpus import Sentence


@dataclass
class Timings:
    """Seconds spent in each part of a trial, for `nerplat bench` and the trial's run record."""

    setup: float = 0.0  # from the start of the trial to the first optimiser step
    train: float = 0.0  # forward, backward and optimiser steps
    evaluate: float = 0.0
    total: float = 0.0
    train_tokens: int = 0  # real (non-padding) sub-tokens passed through training steps
    first_step_unix: float = 0.0  # wall-clock time of the first optimiser step (start-up latency)

    def tokens_per_second(self) -> float:
        return self.train_tokens / self.train if self.train else 0.0

    def as_metrics(self) -> dict[str, float]:
        """Cumulative timings under their MLflow metric names (docs/tracking.md)."""
        return {
            "time_setup_s": self.setup,
            "time_train_s": self.train,
            "time_eval_s": self.evaluate,
            "time_first_step_unix": self.first_step_unix,
            "train_tokens": float(self.train_tokens),
        }


@dataclass(frozen=True)
class Thresholds:
    """Decision thresholds of a two-task head chosen on dev (`train.tune_threshold`)."""

    entity: float
    beginning: float


@dataclass(frozen=True)
class Evaluation:
    """The dev evaluation after one epoch, with the best one so far by the selection metric."""

    epoch: int
    epochs: int
    dev: dict[str, float]  # metric name (`nerplat.metrics`) -> value on the dev subset
    dev_best: dict[str, float]  # the same names at the best epoch so far
    train_loss: float  # loss of the epoch's last training step
    timings: Timings  # cumulative, up to this evaluation
    thresholds: Thresholds | None = None
    stopped_by: str | None = None  # "patience" | "cap" on the evaluation that ends the trial (`trial.stopping`)

    def metrics(self) -> dict[str, float]:
        """Flat metric keys as Tune and MLflow see them: `dev_<name>`, `dev_best_<name>`, ..."""
        flat = {f"dev_{name}": value for name, value in self.dev.items()}
        flat |= {f"dev_best_{name}": value for name, value in self.dev_best.items()}
        flat["train_loss"] = self.train_loss
        if self.thresholds is not None:
            flat |= {"threshold_entity": self.thresholds.entity, "threshold_beginning": self.thresholds.beginning}
        return flat | self.timings.as_metrics()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evaluation:
        thresholds = data.get("thresholds")
        return cls(
            **{
                **data,
                "timings": Timings(**data["timings"]),
                "thresholds": None if thresholds is None else Thresholds(**thresholds),
            }
        )


class Reporter(Protocol):
    def __call__(self, evaluation: Evaluation, save_checkpoint: Callable[[Path], None]) -> None:
        """Receives each evaluation; may call `save_checkpoint(directory)` to persist the trial."""


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
    # A head fitted outside the epoch loop (crfsuite) has no dev curve to judge its budget by: it says
    # whether its own optimiser met its stopping test. None for epoch-trained heads and unknown fits.
    fit_converged: bool | None = None
    # Why training ended ("patience" | "cap", `trial.stopping`) and after which epoch; None: a result
    # recorded before trials said so.
    stopped_by: str | None = None
    stopped_epoch: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **{name: getattr(self, name) for name in ("metrics", "train_sentences", "size_factor", "selected_epoch")},
            "stopped_by": self.stopped_by,
            "stopped_epoch": self.stopped_epoch,
            "evaluations": [evaluation.to_dict() for evaluation in self.evaluations],
            "predictions": [[list(s.tokens), list(s.tags), list(p)] for s, p in self.predictions],
            "timings": asdict(self.timings),
            "notes": list(self.notes),
            "data_checksums": dict(self.data_checksums),
            "fit_converged": self.fit_converged,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrialResult:
        return cls(
            **{name: data[name] for name in ("metrics", "train_sentences", "size_factor", "selected_epoch", "data_checksums")},
            evaluations=[Evaluation.from_dict(e) for e in data["evaluations"]],
            predictions=[(Sentence(tuple(tokens), tuple(gold)), tuple(pred)) for tokens, gold, pred in data["predictions"]],
            timings=Timings(**data["timings"]),
            notes=tuple(data["notes"]),
            fit_converged=data.get("fit_converged"),
            stopped_by=data.get("stopped_by"),
            stopped_epoch=data.get("stopped_epoch"),
        )

@dataclass(frozen=True)
class TrainedTagger:
    """The selected weights at the end of a trial, for whoever keeps the model (`nerplat.serving`).

    Not plain data: it is handed over in-process (`run_trial(keep_model=...)`), never reported.
    """

    tagger: Any  # nerplat.models.tagger.Tagger, in eval mode, with the weights of the selected epoch
    tokenizer: Any  # the encoder's fast tokenizer
    labels: list[str]
    config: Any  # nerplat.config.trial.TrialConfig: encoder settings and head
