"""Earlier completed runs of the MLflow store, as far as their cost goes: what the prediction reads."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nerplat.estimate.cost import MeasuredRun, head_label
from nerplat.track import schema
from nerplat.track.experiment_reader import completed_runs_of_encoders


def measured_runs(client: Any, encoders: Iterable[str]) -> list[MeasuredRun]:
    """Completed tuning trials and replicates of `encoders` in every experiment of the MLflow store."""
    return [measured for run in completed_runs_of_encoders(client, encoders) if (measured := measured_run(run)) is not None]


def measured_run(run: Any) -> MeasuredRun | None:
    """An MLflow run's cost figures; None when it is not a completed trial or replicate that timed its training.

    Its epochs are those it trained (`stopped_epoch`), not its cap, where it logged them: an early
    stop trains fewer, and dividing its tokens by the cap understates an epoch's work. Its wall time
    is the trial's own (`trial_seconds`) where logged: the MLflow run of a replicate opens when its
    look starts, so the run's span also counts the time it waited for a free CPU."""
    tags, metrics, params = run.data.tags, run.data.metrics, run.data.params
    if tags.get(schema.KIND) not in ("trial", "replicate") or run.info.end_time is None:
        return None
    if not metrics.get("time_train_s") or not metrics.get("train_tokens") or "train.epochs" not in params:
        return None
    precision = tags.get(schema.PRECISION) or params.get("train.precision", "fp32")
    if precision == "auto":  # resolved on a device the run did not record
        return None
    return MeasuredRun(
        arm=tags.get(schema.ARM, ""),
        objective=tags.get(schema.OBJECTIVE, ""),
        encoder=tags[schema.ENCODER],
        device=tags.get(schema.DEVICE),
        precision=precision,
        epochs=round(metrics.get("stopped_epoch") or int(params["train.epochs"])),
        train_tokens=metrics["train_tokens"],
        train_s=metrics["time_train_s"],
        wall_s=metrics.get("trial_seconds") or (run.info.end_time - run.info.start_time) / 1000,
        head=_head(params),
    )


def _head(params: dict[str, str]) -> str | None:
    """The run's head as an arm's is keyed (`cost.head_label`), from its logged `head` and `head.*`
    params; None for a run that logged no head."""
    if not params.get("head"):
        return None
    return head_label(params["head"], {k.removeprefix("head."): v for k, v in params.items() if k.startswith("head.")})
