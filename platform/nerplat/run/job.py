"""What a trial is given through its Tune config, and the keys of what it reports back to Tune.

Plain data only: the job travels in the trial's Tune config, and reports cross from the worker to
the driver, where `run.events` hands them to the ledger (`run.ledger`), which writes the trials' run
records (a worker writes only a replicate's model: `run/trainable.py`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from nerplat.plan.model import Arm
from nerplat.track import schema

PHASE_KEY = "nerplat_job"  # the one constant entry of a trial's Tune config; searched keys sit beside it
# beside the searched keys of a tuning trial: its sample index, given by the searcher (`run.study_search`)
SAMPLE_INDEX_KEY = "nerplat_sample_index"
NODE_KEY = "nerplat_node"  # reported with every result: the Ray node the trial ran on
MALLOC_KEY = "nerplat_malloc"  # reported with every result: its worker's allocator (`run.allocator.process_malloc`)
# reported with every result: the arithmetic the trial runs (`train.precision: auto` resolved)
PRECISION_KEY = "nerplat_precision"
EVAL_PRECISION_KEY = "nerplat_eval_precision"  # reported with every result: the arithmetic of its evaluations
DEVICE_KEY = "nerplat_device"  # reported with every result: what the trial computes on (`trial.device.device_label`)
# reported with every result: its host's CPU capability (`trial.device.cpu_capability`)
CPU_CAPABILITY_KEY = "nerplat_cpu_capability"
# What a worker reports of how it runs a trial, and the run tag each becomes.
WORKER_TAGS = {
    MALLOC_KEY: schema.MALLOC,
    PRECISION_KEY: schema.PRECISION,
    EVAL_PRECISION_KEY: schema.EVAL_PRECISION,
    DEVICE_KEY: schema.DEVICE,
    CPU_CAPABILITY_KEY: schema.CPU_CAPABILITY,
}
EVALUATION_KEY = "nerplat_evaluation"  # an evaluation report: `trial.results.Evaluation.to_dict()`
RESULT_KEY = "nerplat_result"  # the final report of a trial with an eval split: `TrialResult.to_dict()`


class TrialJob(BaseModel):
    """What a trial needs besides the searched values, and the MLflow runs it belongs to."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    arm: Arm
    phase: str  # "tune" | "replicate"
    seed: int
    partition: int
    eval_split: str | None  # None in the tune phase: its trials are judged by their dev evaluations
    select_metric: str  # metric name without the split, e.g. "micro_f1"
    fixed_values: dict[str, Any] = {}  # replicate phase: the chosen configuration of the searched keys
    parent_run_id: str = ""  # the arm's tune or replicate run
    run_id: str | None = None  # replicate phase: the run the runner opened for it (tuning trials get theirs at start)
    tracking_uri: str | None = None  # replicate phase, with log_model: where the worker logs the tagger
    log_model: bool = False  # replicate phase: log the trained tagger as the run's MLflow model (spec replicate.models)

    def searched_values(self, config: dict[str, Any]) -> dict[str, Any]:
        """The searched values of this trial: sampled by Tune (tune phase) or chosen (replicate phase)."""
        return {key: config[key] for key in self.arm.search_space} if self.phase == "tune" else self.fixed_values

    def trial_config(self, config: dict[str, Any]) -> Any:
        return self.arm.trial_config(
            self.searched_values(config), seed=self.seed, partition=self.partition, eval_split=self.eval_split
        )
