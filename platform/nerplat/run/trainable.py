"""The Ray Tune function trainable every nerplat trial runs in, for both phases.

A single-worker trial runs `nerplat.trial.run_trial` right inside the Tune function: Tune reuses the
actor between trials, so imports, encoder weights and corpora stay loaded and a new trial starts
in about a second. A multi-worker trial launches a Ray Train `TorchTrainer` from the function
(Train V2's way of nesting under Tune), whose workers run the same `run_trial` under DDP and report
through `TuneReportCallback`.

Evaluations are reported to Tune with `dev_best_<metric>` (best so far), so ASHA and the searcher
never judge a trial by a late dip, beside the typed `Evaluation` record; a trial with an eval split
(a replicate) reports its `TrialResult` last. A trial that `train.early_stopping` stops returns from
the function after its last evaluation's report, so Tune ends it as finished (not as an error) and
the searcher reads its best dev score from that report; ASHA may still stop it earlier. The driver's
ledger (`run.ledger`) logs what workers report; a worker's one MLflow write is the replicate's
model, when the spec keeps models
(`_model_keeper`). Checkpoints are written only when a failed trial may be
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

from nerplat.config.trial import TrialConfig
from nerplat.run.allocator import process_malloc
from nerplat.run.job import (
    CPU_CAPABILITY_KEY,
    DEVICE_KEY,
    EVAL_PRECISION_KEY,
    EVALUATION_KEY,
    MALLOC_KEY,
    NODE_KEY,
    PHASE_KEY,
    PRECISION_KEY,
    RESULT_KEY,
    TrialJob,
)
from nerplat.serving.mlflow_models import log_tagger_model
from nerplat.trial.results import Evaluation, TrainedTagger, TrialResult


def trial_resources(job_config: dict[str, Any]) -> Any:
    """Ray resources of a trial from its arm (Tune asks per trial, so arms may differ)."""
    from ray import tune

    resources = TrialJob.model_validate(job_config[PHASE_KEY]).arm.resources
    per_worker = {"CPU": resources.cpus_per_worker, "GPU": resources.gpus_per_worker, **resources.custom}
    if resources.workers == 1:
        return tune.PlacementGroupFactory([per_worker])
    # The Tune function only launches the TorchTrainer, whose workers reserve their resources in a
    # placement group of their own (Train V2): reserving them here too would book them twice, and a
    # trial that fits the cluster once would wait forever.
    return tune.PlacementGroupFactory([{"CPU": 0.01}])


@lru_cache(maxsize=1)
def ray_node_name() -> str:
    """The Ray node this process runs on, by its `--node-name` (its id when unnamed)."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    for node in ray.nodes():
        if node["NodeID"] == node_id:
            return node.get("NodeName") or node_id
    return node_id


def _worker_facts(trial_config: Any) -> dict[str, str]:
    """Where and how this worker runs the trial, for the driver to tag its run with (after `_set_threads`)."""
    import torch

    # lazy: torch, which only the trial's worker needs; as `run_trial` picks them (`auto` from the host's cached calibration)
    from nerplat.trial.device import cpu_capability, device_label, trial_device
    from nerplat.trial.precision_calibration import resolve_eval_precision, resolve_precision

    device, train = trial_device(), trial_config.train
    threads = train.threads or torch.get_num_threads()
    precision = resolve_precision(train.precision, device, threads)
    return {
        NODE_KEY: ray_node_name(),
        MALLOC_KEY: process_malloc(),
        PRECISION_KEY: precision,
        EVAL_PRECISION_KEY: resolve_eval_precision(train.eval_precision, precision, device, threads),
        DEVICE_KEY: device_label(device, threads),
        CPU_CAPABILITY_KEY: cpu_capability(),
    }


def _evaluation_report(evaluation: Evaluation, facts: dict[str, str]) -> dict[str, Any]:
    """Flat metrics for the scheduler and searcher, and the typed record for the driver's ledger."""
    return {**evaluation.metrics(), "epoch": evaluation.epoch, **facts, EVALUATION_KEY: evaluation.to_dict()}


def _reporter(
    report: Callable[..., None], checkpoint_type: Any, checkpointing: bool, facts: dict[str, str]
) -> Callable[[Evaluation, Callable[[Path], None]], None]:
    """Reports each evaluation through `report` (Tune's or Train's), with a checkpoint when a retry may need one.

    Every rank of a DDP trial calls it as often as rank 0 (Train waits for all ranks at each report);
    Train forwards rank 0's metrics to Tune."""

    def reporter(evaluation: Evaluation, save_checkpoint: Callable[[Path], None]) -> None:
        if not checkpointing or not _is_rank_zero():
            report(_evaluation_report(evaluation, facts))
            return
        with tempfile.TemporaryDirectory(prefix="nerplat-ckpt-") as directory:
            save_checkpoint(Path(directory))
            report(_evaluation_report(evaluation, facts), checkpoint=checkpoint_type.from_directory(directory))

    return reporter


def _is_rank_zero() -> bool:
    """Only rank 0 of a DDP trial saves a checkpoint (the weights are the same on every rank)."""
    import torch.distributed

    return not torch.distributed.is_initialized() or torch.distributed.get_rank() == 0


def _set_threads(job: TrialJob) -> None:
    import torch

    torch.set_num_threads(max(1, int(job.arm.resources.cpus_per_worker)))


def _model_keeper(job: TrialJob) -> Callable[[TrainedTagger], None] | None:
    """Logs the replicate's tagger on its MLflow run (weights only), when the spec keeps models.

    The one write a worker makes: the tagger lives here, and ~90 MB of weights should not travel
    through Tune's results. Registering versions stays with the driver (`run/replicate_phase.py`).
    """
    if not (job.phase == "replicate" and job.log_model and job.run_id and job.tracking_uri):
        return None

    def keep(trained: TrainedTagger) -> None:
        config = trained.config
        log_tagger_model(
            job.tracking_uri, job.run_id, trained.tagger, trained.tokenizer, trained.labels, config.head, config.encoder
        )

    return keep


def _final_report(job: TrialJob, result: TrialResult, facts: dict[str, str]) -> dict[str, Any]:
    """The last report; with an eval split it carries the trial's result to the driver's ledger."""
    last = result.evaluations[-1].metrics() if result.evaluations else {}
    report = {**last, "epoch": result.stopped_epoch, **facts}
    if job.eval_split is not None:
        report[RESULT_KEY] = result.to_dict()
    return report


def nerplat_trial(config: dict[str, Any]) -> None:
    """Tune function trainable: one tuning trial or one replicate of an arm."""
    from ray import tune

    from nerplat.trial.loop import run_trial  # lazy: the trial loop (torch), which only the trial's worker needs

    job = TrialJob.model_validate(config[PHASE_KEY])
    trial_config = job.trial_config(config)
    checkpointing = job.arm.resources.max_retries > 0
    if job.arm.resources.workers > 1:
        _run_with_torch_trainer(job, trial_config, checkpointing)
        return
    _set_threads(job)
    facts = _worker_facts(trial_config)
    checkpoint = tune.get_checkpoint()
    with checkpoint.as_directory() if checkpoint else nullcontext() as resume_from:
        result = run_trial(
            trial_config,
            report=_reporter(tune.report, tune.Checkpoint, checkpointing, facts),
            resume_from=Path(resume_from) if resume_from else None,
            select_metric=job.select_metric,
            keep_model=_model_keeper(job),
        )
    if job.eval_split is not None:
        tune.report(_final_report(job, result, facts))


def _run_with_torch_trainer(job: TrialJob, trial_config: Any, checkpointing: bool) -> None:
    import ray.train
    from ray import tune
    from ray.train.torch import TorchTrainer
    from ray.tune.integration.ray_train import TuneReportCallback

    resources = job.arm.resources
    trainer = TorchTrainer(
        _torch_worker,
        train_loop_config={
            "job": job.model_dump(mode="json"),
            "trial_config": trial_config.model_dump(mode="json"),
            "checkpointing": checkpointing,
        },
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

    from nerplat.trial.loop import run_trial  # lazy: the trial loop (torch), which only the trial's worker needs

    job = TrialJob.model_validate(loop_config["job"])
    trial_config = TrialConfig.model_validate(loop_config["trial_config"])
    _set_threads(job)
    facts = _worker_facts(trial_config)
    checkpoint = ray.train.get_checkpoint()
    with checkpoint.as_directory() if checkpoint else nullcontext() as resume_from:
        result = run_trial(
            trial_config,
            report=_reporter(ray.train.report, ray.train.Checkpoint, loop_config["checkpointing"], facts),
            resume_from=Path(resume_from) if resume_from else None,
            select_metric=job.select_metric,
            keep_model=_model_keeper(job),
        )
    ray.train.report(_final_report(job, result, facts))  # every rank: Train's reports are a barrier
