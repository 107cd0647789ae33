"""Driver-side handling of Tune trial events: MLflow runs, trial outcomes, progress, checkpoint clean-up.

Tune calls this callback in the driver only, so every tuning trial's MLflow run is created by one
process (no races) and named deterministically by the order trials start (`t0000`, `t0001`, ...,
continuing after the trials of an earlier, interrupted session). Outcomes:

- completed: the trial ran all its epochs;
- early_stopped: the scheduler (ASHA) stopped it; MLflow alone would show it FINISHED;
- failed: it raised, after the retries the spec allows;
- interrupted: the run was stopped (Ctrl-C) while the trial ran; `--resume` starts a new trial.

An evaluation that comes with a checkpoint is logged to MLflow only once Tune has registered that
checkpoint (`on_checkpoint`): Tune saves it in a separate step after the result, and a worker killed
in between is retried from the previous checkpoint, which would log the epoch it repeats twice.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ray.tune import Callback
from ray.tune.result import SHOULD_CHECKPOINT

from nerplat.run.progress import ProgressBoard
from nerplat.run.trainable import NODE_KEY, PHASE_KEY, TrialJob
from nerplat.track import schema
from nerplat.track.runs import ExperimentTracker



def arm_tags(arm: Any) -> dict[str, str]:
    return {
        schema.ARM: arm.id,
        schema.DATASET: arm.dataset,
        schema.SAMPLER: arm.sampler_description,
        schema.METHOD: arm.method,
        schema.OBJECTIVE: arm.objective,
        schema.HEAD: arm.head,
        schema.ENCODER: arm.fixed["encoder"]["name"],
    }


@dataclass
class _Running:
    job: TrialJob
    run_id: str
    started: float = field(default_factory=time.monotonic)
    last_epoch: int = 0
    final: bool = False
    node: str | None = None
    unsaved: tuple[dict[str, float], int] | None = None  # metrics and epoch waiting for their checkpoint


@dataclass
class TrialEvents(Callback):
    """Tune callback of one Tuner: logs each trial to MLflow and feeds the progress board."""

    tracker: ExperimentTracker
    board: ProgressBoard
    tune_parents: dict[str, str] = field(default_factory=dict)  # arm id -> its tune parent run id
    next_trial_index: int = 0
    running: dict[str, _Running] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)  # Tune trial id -> status
    errors: dict[str, str] = field(default_factory=dict)  # arm id -> last error message

    def __post_init__(self) -> None:
        super().__init__()

    def __getstate__(self) -> dict:
        # Tune pickles its callbacks into the experiment state; the live console cannot be, and
        # nerplat resumes from MLflow, so the pickled copy never needs it.
        return {**self.__dict__, "board": None}

    def _progress(self, job: TrialJob):
        return self.board.phase(job.arm.id, job.phase, total=0)

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        job = TrialJob.model_validate(trial.config[PHASE_KEY])
        if trial.trial_id in self.running:  # a retry after a failure: same run
            return
        if job.phase == "tune":
            sampled = {key: trial.config[key] for key in job.arm.search_space}
            name = f"t{self.next_trial_index:04d}"
            self.next_trial_index += 1
            run = self.tracker.start_trial_run(
                self.tune_parents[job.arm.id],
                job.arm.id,
                name,
                tags={**arm_tags(job.arm), schema.SEED: job.seed, schema.PARTITION: job.partition, schema.SAMPLED: json.dumps(sampled)},
                params=job.arm.trial_config(sampled, seed=job.seed, partition=job.partition, eval_split=job.eval_split).model_dump(mode="json"),
            )
            run_id = run.run_id
        else:
            run_id = job.replicate_run_id or ""
        self.running[trial.trial_id] = _Running(job, run_id)
        self._progress(job).running += 1
        self.board.refresh()

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        state = self.running.get(trial.trial_id)
        if state is None:
            return
        node = result.get(NODE_KEY)
        if node and state.run_id and node != state.node:
            state.node = node
            self.tracker.client.set_tag(state.run_id, schema.RAY_NODE, node)
        if result.get("final"):
            state.final = True
            return
        epoch = int(result.get("epoch", 0))
        state.last_epoch = epoch
        metrics = {
            key: float(value)
            for key, value in result.items()
            if key.startswith(("dev_", "time_", "train_", "threshold_")) and isinstance(value, (int, float)) and not isinstance(value, bool)
        }
        if metrics and state.run_id:
            if result.get(SHOULD_CHECKPOINT):
                state.unsaved = (metrics, epoch)
            else:
                self.tracker.log_epoch(state.run_id, metrics, epoch)
        metric = f"dev_best_{state.job.select_metric}"
        if metric in result:
            self._progress(state.job).offer(float(result[metric]))
        self.board.refresh()

    def on_checkpoint(self, iteration: int, trials: list, trial: Any, checkpoint: Any, **info: Any) -> None:
        state = self.running.get(trial.trial_id)
        if state is not None:
            self._log_unsaved(state)

    def _log_unsaved(self, state: _Running) -> None:
        if state.unsaved is not None:
            metrics, epoch = state.unsaved
            state.unsaved = None
            self.tracker.log_epoch(state.run_id, metrics, epoch)

    def _end(self, trial: Any, status: str) -> None:
        state = self.running.pop(trial.trial_id, None)
        if state is None:
            return
        self._log_unsaved(state)  # a trial that ends is not retried: its last evaluation stands
        self.outcomes[trial.trial_id] = status
        if state.run_id:
            self.tracker.finish(state.run_id, status)
        progress = self._progress(state.job)
        progress.running = max(0, progress.running - 1)
        progress.trial_seconds.append(time.monotonic() - state.started)
        if status == "completed":
            progress.finished += 1
        elif status == "early_stopped":
            progress.stopped += 1
        elif status == "failed":
            progress.errored += 1
        _remove_checkpoints(trial)
        self.board.refresh()

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        state = self.running.get(trial.trial_id)
        if state is None:
            return
        epochs = int(state.job.arm.fixed["train"]["epochs"])
        done = state.final or state.last_epoch >= epochs
        self._end(trial, "completed" if done else "early_stopped")

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        state = self.running.get(trial.trial_id)
        if state is not None:
            self.errors[state.job.arm.id] = _error_text(trial)
            self._progress(state.job).last_error = self.errors[state.job.arm.id]
        self._end(trial, "failed")

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        state = self.running.get(trial.trial_id)
        if state is not None:
            state.unsaved = None  # the retry repeats that evaluation from the last checkpoint

    def mark_interrupted(self) -> int:
        """Closes the runs of trials that were still running when the Tuner stopped; returns how many."""
        interrupted = list(self.running)
        for trial_id in interrupted:
            state = self.running.pop(trial_id)
            self.outcomes[trial_id] = "interrupted"
            self._log_unsaved(state)
            if state.run_id:
                self.tracker.finish(state.run_id, "interrupted")
        return len(interrupted)


def _error_text(trial: Any) -> str:
    path = getattr(trial, "error_file", None) or ""
    try:
        text = Path(path).read_text() if path else ""
    except OSError:
        text = ""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else str(getattr(trial, "error_msg", "") or "unknown error")


def _remove_checkpoints(trial: Any) -> None:
    """Checkpoints exist for retries only; a trial that ended needs none (disk stays bounded)."""
    path = Path(getattr(trial, "local_path", None) or getattr(trial, "path", "") or "")
    if path.is_dir():
        for checkpoint in path.glob("checkpoint_*"):
            shutil.rmtree(checkpoint, ignore_errors=True)
