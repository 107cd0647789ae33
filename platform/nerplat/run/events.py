"""Driver-side handling of Tune trial events: hands reports to the ledger, feeds progress and metrics, cleans checkpoints.

Tune calls this callback in the driver only. It translates Tune's events into the ledger's calls
(`run.ledger` holds the rule for what is written to MLflow and when), tells a tuning search's Optuna
study which MLflow run each trial logs to (`run.study_search`), keeps the progress board and hands trial
counts and evaluations to the exported metrics (`run.exported_metrics`); it writes nothing itself.
Tune delivers a checkpointed result first and registers its checkpoint in a later step
(`on_checkpoint`), which is when the ledger logs that evaluation. A tuning trial's end is told to
its Optuna study only once the ledger has ended its MLflow run (`StudySearch.tell`): MLflow's end is
the one record that a trial finished.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ray.tune import Callback
from ray.tune.result import SHOULD_CHECKPOINT

from nerplat.run.exported_metrics import TrialMetrics
from nerplat.run.job import EVALUATION_KEY, NODE_KEY, PHASE_KEY, RESULT_KEY, WORKER_TAGS, TrialJob
from nerplat.run.ledger import RunLedger
from nerplat.run.progress import PhaseProgress, ProgressBoard
from nerplat.track.store import StoreLost
from nerplat.trial.results import Evaluation, TrialResult


@dataclass
class _Running:
    job: TrialJob


@dataclass
class TrialEvents(Callback):
    """Tune callback of one Tuner: each trial's reports go to the ledger, its progress to the board
    and the metrics. Without `metrics`, an unstarted `TrialMetrics` (which exports nothing) is used."""

    ledger: RunLedger
    board: ProgressBoard
    metrics: TrialMetrics | None = None
    running: dict[str, _Running] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)  # Tune trial id -> status
    errors: dict[str, list[str]] = field(default_factory=dict)  # arm id -> full message of each failed trial
    store_lost: StoreLost | None = None
    search: Any = None  # a tune phase's `run.study_search.StudySearch`, whose trials are matched to their runs

    def __post_init__(self) -> None:
        super().__init__()
        self.metrics = self.metrics or TrialMetrics(self.board.experiment)

    def __getstate__(self) -> dict:
        # Tune pickles its callbacks into the experiment state; the live console and the metrics'
        # thread cannot be, and nerplat resumes from MLflow, so the pickled copy never needs them
        # (nor the searcher Tune saves itself).
        return {**self.__dict__, "board": None, "metrics": None, "search": None}

    def _progress(self, job: TrialJob) -> PhaseProgress:
        return self.board.phase(job.arm.id, job.phase, total=0)

    def _counted(self, progress: PhaseProgress) -> None:
        self.metrics.counted(progress)
        self.board.refresh()

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        if trial.trial_id in self.running:  # a retry after a failure: same run
            return
        job = TrialJob.model_validate(trial.config[PHASE_KEY])
        run = self.ledger.start_trial(trial.trial_id, job, trial.config)
        if self.search is not None and job.phase == "tune":
            self.search.record_run(trial.trial_id, run.run_id, run.name)
        self.running[trial.trial_id] = _Running(job)
        progress = self._progress(job)
        self.board.trial_started(trial.trial_id, progress)
        self._counted(progress)

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        state = self.running.get(trial.trial_id)
        if state is None:
            return
        if result.get(NODE_KEY):
            worker = {tag: result[key] for key, tag in WORKER_TAGS.items() if key in result}
            self.ledger.record_node(trial.trial_id, result[NODE_KEY], worker)
        if RESULT_KEY in result:
            self.ledger.record_result(trial.trial_id, TrialResult.from_dict(result[RESULT_KEY]))
        elif EVALUATION_KEY in result:
            evaluation = Evaluation.from_dict(result[EVALUATION_KEY])
            self.ledger.record_evaluation(trial.trial_id, evaluation, awaits_checkpoint=bool(result.get(SHOULD_CHECKPOINT)))
            epoch_seconds = (evaluation.timings.train + evaluation.timings.evaluate) / max(1, evaluation.epoch)
            self.board.trial_evaluated(trial.trial_id, evaluation.epoch, evaluation.epochs, epoch_seconds)
            if state.job.select_metric in evaluation.dev_best:
                self._progress(state.job).offer(evaluation.dev_best[state.job.select_metric])
            run_name = self.ledger.run_name(trial.trial_id)
            self.metrics.evaluated(trial.trial_id, state.job, run_name, result.get(NODE_KEY, ""), evaluation)
        self.board.refresh()

    def on_checkpoint(self, iteration: int, trials: list, trial: Any, checkpoint: Any, **info: Any) -> None:
        self.ledger.checkpoint_registered(trial.trial_id)

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self.ledger.retrying(trial.trial_id)
        self.metrics.retried(trial.trial_id)

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        # Tune calls this hook inside a try that logs any exception with its traceback and fails
        # the trial instead: a lost store is kept here and raised at the end of Tune's step.
        try:
            self._end(trial, failed=False)
        except StoreLost as lost:
            self.store_lost = lost
            return  # the run did not end: the study is not told, and --resume fails the trial there
        self._tell(trial)

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        if self.store_lost is not None:
            raise self.store_lost

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        job = TrialJob.model_validate(trial.config[PHASE_KEY])
        message = _error_text(trial)
        self.errors.setdefault(job.arm.id, []).append(message)
        self._progress(job).last_error = message.splitlines()[0] if message else message
        if trial.trial_id not in self.running:  # failed before it started (no run was opened)
            self.outcomes[trial.trial_id] = "failed"
        self._end(trial, failed=True)
        self._tell(trial)

    def _tell(self, trial: Any) -> None:
        if self.search is not None:
            self.search.tell(trial.trial_id)

    def _end(self, trial: Any, *, failed: bool) -> None:
        state = self.running.pop(trial.trial_id, None)
        if state is None:
            return
        status = self.ledger.end(trial.trial_id, failed=failed)
        self.metrics.ended(trial.trial_id)
        self.outcomes[trial.trial_id] = status
        progress = self._progress(state.job)
        self.board.trial_ended(trial.trial_id)
        if status == "completed":
            progress.finished += 1
        elif status == "early_stopped":
            progress.stopped += 1
        elif status == "failed":
            progress.errored += 1
        _remove_checkpoints(trial)
        self._counted(progress)

    def mark_interrupted(self) -> int:
        """Closes the runs of trials that were still running when the Tuner stopped; returns how many."""
        for trial_id in self.running:
            self.metrics.ended(trial_id)
        self.running.clear()
        interrupted = self.ledger.interrupt_open()
        self.outcomes |= {trial_id: "interrupted" for trial_id in interrupted}
        return len(interrupted)


def _error_text(trial: Any) -> str:
    path = getattr(trial, "error_file", None) or ""
    try:
        text = Path(path).read_text() if path else ""
    except OSError:
        text = ""
    return failure_message(text) or str(getattr(trial, "error_msg", "") or "unknown error")


def failure_message(traceback_text: str) -> str:
    """The whole message of the innermost exception of a Ray error file, every line of it (a
    worker's death is explained over several lines): what follows the last traceback frame."""
    lines = [line.rstrip() for line in traceback_text.strip().splitlines() if line.strip()]
    last_frame = max((i for i, line in enumerate(lines) if line.startswith("  ") or line.startswith("Traceback (")), default=-1)
    message = [line for line in lines[last_frame + 1 :] if not line.startswith("Failure # ")]
    return "\n".join(message).strip()


def _remove_checkpoints(trial: Any) -> None:
    """Checkpoints exist for retries only; a trial that ended needs none (disk stays bounded)."""
    path = Path(getattr(trial, "local_path", None) or getattr(trial, "path", "") or "")
    if path.is_dir():
        for checkpoint in path.glob("checkpoint_*"):
            shutil.rmtree(checkpoint, ignore_errors=True)
