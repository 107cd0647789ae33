"""One trial, in-process: corpus -> samplers -> features -> tagger + objective -> train -> evaluate.

`run_trial(config)` is what `nerplat train` runs directly and what every Ray trial runs inside its
worker. It drives a `trial.session.TrialSession` and knows nothing of Ray Tune or MLflow: it reports
each dev evaluation through the `Reporter` the caller passes, and resumes from a directory that
reporter asked it to save. Model selection is described in `trial.session`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch

from nerplat.config.trial import TrialConfig
from nerplat.trial.feature_crf import fitted_outside_loop, run_feature_trial
from nerplat.trial.report import Reporter, TrainedTagger, TrialResult
from nerplat.trial.session import StepProgress, TrialSession


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
    if fitted_outside_loop(config.head):  # crfsuite: one fit, not epochs of optimiser steps
        return run_feature_trial(config, report=report, resume_from=resume_from)
    session = TrialSession(config, select_metric=select_metric, progress=progress, device=device)
    session.setup()
    if resume_from is not None:
        session.restore(resume_from)
    for epoch in session.remaining_epochs():
        session.train_epoch(epoch)
        if session.evaluates_after(epoch):
            evaluation = session.evaluate()
            if report is not None:  # every rank: Ray Train's reports are a barrier (the reporter picks who saves)
                report(evaluation, session.save)
    return session.finish(keep_model)
