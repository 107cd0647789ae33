"""One trial, in-process: corpus -> samplers -> features -> tagger + objective -> train -> evaluate.

`run_trial(config)` is what `nerplat train` runs directly and what every Ray trial runs inside its
worker. It drives the session of the variant the head's registration names (`trial.variant`:
`TrialSession`'s epochs for sequence labelling, `MRCSession` for MRC, one crfsuite fit) and knows
nothing of Ray Tune or MLflow: it reports each dev evaluation through the `Reporter` the caller passes,
and resumes from a directory that reporter asked it to save. Model selection is described in `trial.session`.
A trial stops after the evaluation that says so (`trial.stopping`: at its dev plateau under
`train.early_stopping`, else at `train.epochs`); the function then returns normally, so a stopped
tuning trial ends in Ray Tune as a finished trial, and its reports carried its best dev score so far.

A loss that is not finite fails the trial (`NonFiniteLoss`) after the epoch it appeared in: the
weights it updated are NaN, every later evaluation would score a broken model as if it had trained,
and an arm whose trials all "complete" with `train_loss nan` would be replicated and reported.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import torch

from nerplat.config.trial import TrialConfig
from nerplat.trial.results import Reporter, TrainedTagger, TrialResult
from nerplat.trial.session import StepProgress
from nerplat.trial.variant_registry import session_for


def run_trial(
    config: TrialConfig,
    *,
    report: Reporter | None = None,
    resume_from: Path | None = None,
    progress: StepProgress | None = None,
    select_metric: str = "micro_f1",
    keep_model: Callable[[TrainedTagger], None] | None = None,
    device: torch.device | None = None,
) -> TrialResult:
    """Train and evaluate one configuration, continuing from `resume_from` when it holds a checkpoint.

    `keep_model` receives the tagger with the selected weights (main process only), e.g. to log it.
    `device` defaults to the worker's CUDA device when torch sees one, else the CPU (`trial.device`).
    """
    keep_weights = config.eval_split is not None or keep_model is not None  # else no one reads the best epoch's weights
    session = session_for(config.head)(
        config, select_metric=select_metric, progress=progress, device=device, keep_weights=keep_weights
    )
    session.setup()
    if resume_from is not None:
        session.restore(resume_from)
    for epoch in session.remaining_epochs():
        refuse_non_finite(session.train_epoch(epoch), config, epoch, session.steps)
        if session.evaluates_after(epoch):
            evaluation = session.evaluate()
            if report is not None:  # every rank: Ray Train's reports are a barrier (the reporter picks who saves)
                report(evaluation, session.save)
            if evaluation.stopped_by is not None:  # every rank alike: they scored the same weights
                break
    return session.finish(keep_model)


class NonFiniteLoss(ArithmeticError):
    """The training loss became NaN or infinite: the trial failed, and says where."""


def refuse_non_finite(loss: float | None, config: TrialConfig, epoch: int, steps: int) -> None:
    """Raises `NonFiniteLoss` naming the objective (the method's loss), the epoch and the step.

    None is an epoch without optimiser steps (a crfsuite fit, whose own tests end it): nothing to refuse.
    """
    if loss is None or math.isfinite(loss):
        return
    params = ", ".join(f"{key}={value}" for key, value in sorted(config.objective.params.items()))
    objective = f"'{config.objective.name}'" + (f" ({params})" if params else "")
    raise NonFiniteLoss(
        f"the loss of objective {objective} is {loss} at epoch {epoch}, step {steps} of the trial (the epoch's last "
        "step): the trial failed; lower train.lr, keep train.max_grad_norm set, or check the objective's parameters"
    )
