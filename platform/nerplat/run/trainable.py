"""The Ray Tune function trainable every nerplat trial runs in, for both phases.

A single-worker trial runs `nerplat.trial.run_trial` right inside the Tune function: Tune reuses the
actor between trials, so imports, encoder weights and corpora stay loaded and a new trial starts
in about a second. A multi-worker trial launches a Ray Train `TorchTrainer` from the function
(Train V2's way of nesting under Tune), whose workers run the same `run_trial` under DDP and report
through `TuneReportCallback`.

Evaluations are reported to Tune with `dev_best_<metric>` (best so far), so ASHA and the searcher
never judge a trial by a late dip. Checkpoints are written only when a failed trial may be
retried (`resources.max_retries > 0`): Tune keeps the newest one while the trial runs and the
runner deletes it when the trial ends.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import nullcontext
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict

from nerplat.plan.model import Arm
from nerplat.trial.report import Evaluation, TrainedTagger, TrialResult
from nerplat.track import schema
from nerplat.track.runs import ExperimentTracker

PHASE_KEY = "nerplat_job"  # the one constant entry of a trial's Tune config; searched keys sit beside it
NODE_KEY = "nerplat_node"  # reported with every result: the Ray node the trial ran on


class TrialJob(BaseModel):
    """What a trial needs besides the searched values: plain data, so it travels in a Tune config."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    arm: Arm
    phase: str  # "tune" | "replicate"
    seed: int
    partition: int
    eval_split: str | None  # None in the tune phase: its trials are judged by their dev evaluations
    select_metric: str  # metric name without the split, e.g. "micro_f1"
    fixed_values: dict[str, Any] = {}  # replicate phase: the chosen configuration of the searched keys
    replicate_run_id: str | None = None  # replicate phase: the MLflow run the worker logs results to
    tracking_uri: str | None = None
    experiment_id: str | None = None
    experiment_name: str | None = None
    run_tags: dict[str, str] = {}  # the driver tracker's tags (git commit, spec hash) for runs the worker writes
    log_model: bool = False  # replicate phase: log the trained tagger as the run's MLflow model (spec replicate.models)


def trial_resources(job_config: dict[str, Any]) -> Any:
    """Ray resources of a trial from its arm (Tune asks per trial, so arms may differ)."""
    from ray import tune

    resources = TrialJob.model_validate(job_config[PHASE_KEY]).arm.resources
    per_worker = {"CPU": resources.cpus_per_worker, "GPU": resources.gpus_per_worker, **resources.custom}
    if resources.workers == 1:
        return tune.PlacementGroupFactory([per_worker])
    # The Tune function only launches the TorchTrainer; its workers reserve the real resources.
    return tune.PlacementGroupFactory([{"CPU": 0.01}] + [per_worker] * resources.workers, strategy="PACK")


@lru_cache(maxsize=1)
def ray_node_name() -> str:
    """The Ray node this process runs on, by its `--node-name` (its id when unnamed)."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    for node in ray.nodes():
        if node["NodeID"] == node_id:
            return node.get("NodeName") or node_id
    return node_id


def _tune_reporter(checkpointing: bool) -> Callable[[Evaluation, Callable[[Path], None]], None]:
    from ray import tune

    def report(evaluation: Evaluation, save_checkpoint: Callable[[Path], None]) -> None:
        metrics = {**evaluation.metrics, "epoch": evaluation.epoch, NODE_KEY: ray_node_name()}
        if not checkpointing:
            tune.report(metrics)
            return
        with tempfile.TemporaryDirectory(prefix="nerplat-ckpt-") as directory:
            save_checkpoint(Path(directory))
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(directory))

    return report


def _train_reporter(checkpointing: bool) -> Callable[[Evaluation, Callable[[Path], None]], None]:
    import ray.train

    def report(evaluation: Evaluation, save_checkpoint: Callable[[Path], None]) -> None:
        metrics = {**evaluation.metrics, "epoch": evaluation.epoch, NODE_KEY: ray_node_name()}
        if not checkpointing:
            ray.train.report(metrics)
            return
        with tempfile.TemporaryDirectory(prefix="nerplat-ckpt-") as directory:
            save_checkpoint(Path(directory))
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(directory))

    return report


def _trial_config(job: TrialJob, config: dict[str, Any]):
    searched = {key: config[key] for key in job.arm.search_space} if job.phase == "tune" else job.fixed_values
    return job.arm.trial_config(searched, seed=job.seed, partition=job.partition, eval_split=job.eval_split)


def _set_threads(job: TrialJob) -> None:
    import torch

    torch.set_num_threads(max(1, int(job.arm.resources.cpus_per_worker)))


def _log_replicate(job: TrialJob, result: TrialResult) -> None:
    """Final test metrics and predictions go straight to the replicate's MLflow run."""
    if job.replicate_run_id is None or job.tracking_uri is None:
        return
    tracker = ExperimentTracker(job.tracking_uri, job.experiment_id or "", job.experiment_name or "", run_tags=job.run_tags)
    final = {
        **result.metrics,
        "train_sentences": float(result.train_sentences),
        "train_size_factor": result.size_factor,
        "selected_epoch": float(result.selected_epoch),
        "trial_seconds": result.timings.total,
    }
    tracker.log_epoch(job.replicate_run_id, final, epoch=result.selected_epoch)
    tracker.client.set_tag(job.replicate_run_id, schema.SIZE, str(result.train_sentences))
    tokens = [list(sentence.tokens) for sentence, _ in result.predictions]
    gold = [list(sentence.tags) for sentence, _ in result.predictions]
    tracker.log_predictions(job.replicate_run_id, tokens, gold, [list(p) for _, p in result.predictions])
    tracker.log_data_checksums(job.replicate_run_id, result.data_checksums)
    if result.notes:
        tracker.client.log_text(job.replicate_run_id, "\n".join(result.notes) + "\n", "data_notes.txt")


def _model_keeper(job: TrialJob) -> Callable[[TrainedTagger], None] | None:
    """Logs the replicate's tagger on its MLflow run (weights only), when the spec keeps models."""
    if not (job.phase == "replicate" and job.log_model and job.replicate_run_id and job.tracking_uri):
        return None
    from nerplat.serving.mlflow_models import log_tagger_model

    def keep(trained: TrainedTagger) -> None:
        config = trained.config
        log_tagger_model(job.tracking_uri, job.replicate_run_id, trained.tagger, trained.tokenizer, trained.labels, config.head, config.encoder)

    return keep


def _final_report(job: TrialJob, result: TrialResult) -> dict[str, Any]:
    last = result.evaluations[-1].metrics if result.evaluations else {}
    return {
        **last,
        **result.metrics,
        "epoch": job.arm.fixed["train"]["epochs"],
        "train_sentences": result.train_sentences,
        "train_size_factor": result.size_factor,
        "final": True,
        NODE_KEY: ray_node_name(),
    }


def nerplat_trial(config: dict[str, Any]) -> None:
    """Tune function trainable: one tuning trial or one replicate of an arm."""
    from ray import tune

    from nerplat.trial.loop import run_trial

    job = TrialJob.model_validate(config[PHASE_KEY])
    trial_config = _trial_config(job, config)
    checkpointing = job.arm.resources.max_retries > 0
    if job.arm.resources.workers > 1:
        _run_with_torch_trainer(job, trial_config, checkpointing)
        return
    _set_threads(job)
    checkpoint = tune.get_checkpoint()
    with checkpoint.as_directory() if checkpoint else nullcontext() as resume_from:
        result = run_trial(
            trial_config,
            report=_tune_reporter(checkpointing),
            resume_from=Path(resume_from) if resume_from else None,
            select_metric=job.select_metric,
            keep_model=_model_keeper(job),
        )
    if job.phase == "replicate":
        _log_replicate(job, result)
        tune.report(_final_report(job, result))


def _run_with_torch_trainer(job: TrialJob, trial_config: Any, checkpointing: bool) -> None:
    import ray.train
    from ray import tune
    from ray.train.torch import TorchTrainer
    from ray.tune.integration.ray_train import TuneReportCallback

    resources = job.arm.resources
    trainer = TorchTrainer(
        _torch_worker,
        train_loop_config={"job": job.model_dump(mode="json"), "trial_config": trial_config.model_dump(mode="json"), "checkpointing": checkpointing},
        scaling_config=ray.train.ScalingConfig(
            num_workers=resources.workers,
            use_gpu=resources.gpus_per_worker > 0,
            resources_per_worker={"CPU": resources.cpus_per_worker, "GPU": resources.gpus_per_worker, **resources.custom},
        ),
        run_config=ray.train.RunConfig(
            name=f"train-{tune.get_context().get_trial_id()}",
            storage_path=os.environ.get("NERPLAT_RAY_STORAGE") or tempfile.gettempdir(),
            callbacks=[TuneReportCallback()],
            failure_config=ray.train.FailureConfig(max_failures=resources.max_retries),
        ),
    )
    trainer.fit()


def _torch_worker(loop_config: dict[str, Any]) -> None:
    """Ray Train worker: the same trial loop, under the process group Ray Train set up."""
    import ray.train

    from nerplat.plan.trial_config import TrialConfig
    from nerplat.trial.loop import run_trial

    job = TrialJob.model_validate(loop_config["job"])
    _set_threads(job)
    checkpoint = ray.train.get_checkpoint()
    with checkpoint.as_directory() if checkpoint else nullcontext() as resume_from:
        result = run_trial(
            TrialConfig.model_validate(loop_config["trial_config"]),
            report=_train_reporter(loop_config["checkpointing"]),
            resume_from=Path(resume_from) if resume_from else None,
            select_metric=job.select_metric,
            keep_model=_model_keeper(job),
        )
    if job.phase == "replicate" and ray.train.get_context().get_world_rank() == 0:
        _log_replicate(job, result)
    ray.train.report(_final_report(job, result))
