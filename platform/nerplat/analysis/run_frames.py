"""MLflow runs of one experiment -> Polars frames, one row per run (read through `track/experiment_reader.py`).

Replicate runs become the frame every statistic is computed from: identity columns (from the
`nerplat.*` tags of `track/schema.py`), one Float64 column per metric, and why each run stopped
(`with_stopping`: `stopped_by`, `stopped_epoch`, `converged_run`). Tune trials become a
second frame with their sampled hyper-parameters, and the tune parent runs a third with the
configuration each arm chose. Nothing here computes statistics.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from nerplat.errors import Problem, UserInputError
from nerplat.track import schema
from nerplat.track.current_runs import current_runs
from nerplat.track.experiment_reader import find_experiment, find_summary_run, latest_steps, read_plan, search_all

if TYPE_CHECKING:
    from nerplat.track.experiment_reader import MlflowClient, Run

# Frame column -> tag. Order is the column order of every frame.
TEXT_TAGS = {
    "arm": schema.ARM,
    "method": schema.METHOD,
    "dataset": schema.DATASET,
    "sampler": schema.SAMPLER,
    "objective": schema.OBJECTIVE,
    "head": schema.HEAD,
    "encoder": schema.ENCODER,
    "status": schema.STATUS,
}
INTEGER_TAGS = {"size": schema.SIZE, "seed": schema.SEED, "partition": schema.PARTITION}
IDENTITY_COLUMNS = ("run_id", *TEXT_TAGS, "sampler_label", "sampler_family", *INTEGER_TAGS)
PARAM_PREFIX = "param."
# Per-epoch dev metrics read back as learning curves (the dev counterparts of the headline F1s).
CURVE_METRICS = ("dev_micro_f1", "dev_macro_f1")
EPOCH_SCHEMA = {"run_id": pl.String(), "metric": pl.String(), "epoch": pl.Int64(), "value": pl.Float64()}

# Sampler parameters that set the training size: dropped from a sampler's label to get the family
# whose members differ only in size (the x axis of learning curves and the columns of size tables).
_SIZE_PARAMETER = re.compile(r"\b(?:size|fraction)=[^,()]*,?\s*")


def sampler_family(sampler: str | None) -> str | None:
    """'untyped+low_resource(size=100, partitions=10)' -> 'untyped+low_resource(partitions=10)'."""
    if sampler is None:
        return None
    without = _SIZE_PARAMETER.sub("", sampler)
    without = re.sub(r",\s*\)", ")", without)
    return without.replace("()", "")


def sampler_label(arm: str | None, dataset: str | None, method: str | None) -> str | None:
    """The spec's sampler setting label, the middle of the arm id '<dataset>/<sampler label>/<method>'."""
    if arm is None or dataset is None or method is None:
        return None
    head, tail = f"{dataset}/", f"/{method}"
    if arm.startswith(head) and arm.endswith(tail) and len(arm) > len(head) + len(tail):
        return arm[len(head) : -len(tail)]
    return None


def _identity(run: Run) -> dict[str, Any]:
    tags = run.data.tags
    row: dict[str, Any] = {"run_id": run.info.run_id}
    row.update({column: tags.get(tag) for column, tag in TEXT_TAGS.items()})
    row["sampler_label"] = sampler_label(row["arm"], row["dataset"], row["method"])
    row["sampler_family"] = sampler_family(row["sampler"])
    for column, tag in INTEGER_TAGS.items():
        row[column] = _integer_tag(run, tag)
    return row


def _integer_tag(run: Run, tag: str) -> int | None:
    text = run.data.tags.get(tag)
    if text is None or text == "":
        return None
    try:
        return int(float(text))
    except ValueError:
        raise UserInputError(
            Problem(f"tag {tag}={text!r} of run {run.info.run_id} is not an integer", path=tag)
        ) from None


def _identity_schema() -> dict[str, pl.DataType]:
    types: dict[str, pl.DataType] = {"run_id": pl.String()}
    types.update({c: pl.String() for c in TEXT_TAGS})
    types["sampler_label"] = pl.String()
    types["sampler_family"] = pl.String()
    types.update({c: pl.Int64() for c in INTEGER_TAGS})
    return types


def _run_frame(runs: list[Run], extra: dict[str, pl.DataType], row_extra) -> pl.DataFrame:
    metric_names = sorted({name for run in runs for name in run.data.metrics})
    types = _identity_schema() | extra | {m: pl.Float64() for m in metric_names}
    columns: dict[str, list] = {c: [] for c in types}
    for run in runs:
        row = _identity(run) | row_extra(run)
        metrics = run.data.metrics
        for name in columns:
            columns[name].append(metrics.get(name) if name in metric_names else row.get(name))
    frame = pl.DataFrame(columns, schema=types)
    if "train_sentences" in frame.columns:  # runs without a size tag: the sentences they trained on
        frame = frame.with_columns(pl.col("size").fill_null(pl.col("train_sentences").round().cast(pl.Int64)))
    return frame


REPLICATE_COLUMNS = {"stopped_by": pl.String(), "registrations": pl.String(), "test_evaluated_at": pl.Float64()}


def replicate_frame(runs: list[Run]) -> pl.DataFrame:
    """One row per replicate run: identity columns, `stopped_by`, the registrations it served (JSON of
    its `nerplat.registrations` tag, `analysis.registrations`), when it was first evaluated on test
    (`test_evaluated_at`), then every metric (latest value) by name, with `stopped_epoch` as Int64 and
    `converged_run` (`with_stopping`)."""
    frame = _run_frame(runs, REPLICATE_COLUMNS, _replicate_columns)
    return with_stopping(frame).sort("dataset", "sampler", "method", "seed", "partition", "run_id")


def _replicate_columns(run: Run) -> dict[str, Any]:
    tags = run.data.tags
    return {"stopped_by": tags.get(schema.STOPPED_BY), "registrations": tags.get(schema.REGISTRATIONS),
            "test_evaluated_at": _first_test_logged(run)}


def _first_test_logged(run: Run) -> float | None:
    """Unix seconds of the run's earliest logged test metric (MLflow's timestamp): when it was first
    evaluated on test; None when it has none."""
    stamps = [metric.timestamp for metric in run.to_proto().data.metrics if metric.key.startswith("test_")]
    return min(stamps) / 1000 if stamps else None


BEFORE_LEARNING = "patience_before_learning"


def with_stops_before_learning(frame: pl.DataFrame, epochs: pl.DataFrame) -> pl.DataFrame:
    """`frame` (with `with_stopping`'s columns) with `stopped_by` BEFORE_LEARNING, and `converged_run`
    False, for a run that stopped by patience while its best dev evaluation was its first one.

    Such a run never rose above where it started: its plateau is the untrained model's (a constant
    predictor scores above 0 on untyped spans), not a level it learned. `trial.stopping` no longer
    stops a run there; runs trained before it counted patience that way are read with this. `epochs`
    (`epoch_frame`) gives each run's first evaluated epoch."""
    if frame.is_empty() or epochs.is_empty() or not {"selected_epoch", "stopped_by", "converged_run"} <= set(frame.columns):
        return frame
    first = epochs.group_by("run_id").agg(pl.col("epoch").min().alias("first_evaluation"))
    marked = frame.join(first, on="run_id", how="left")
    early = (pl.col("stopped_by") == "patience") & (pl.col("selected_epoch").round() <= pl.col("first_evaluation"))
    return marked.with_columns(
        pl.when(early).then(pl.lit(BEFORE_LEARNING)).otherwise(pl.col("stopped_by")).alias("stopped_by"),
        pl.when(early).then(pl.lit(False)).otherwise(pl.col("converged_run")).alias("converged_run"),
    ).drop("first_evaluation")


def with_stopping(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with `stopped_by` (String), `stopped_epoch` (Int64) and `converged_run` (Boolean), null
    where a run did not record them (a frame older than the columns gets them all null).

    `converged_run` is a crfsuite fit's `fit_converged` where the run logged one (its one fit is its
    cap, so its own stopping test decides), else True for a run that stopped by patience
    (`train.early_stopping`) and False for one that hit the cap (`train.epochs`).
    """

    def column(name: str, dtype: pl.DataType) -> pl.Expr:
        return pl.col(name).cast(dtype) if name in frame.columns else pl.lit(None, dtype)

    stopped_by, fit = column("stopped_by", pl.String()), column("fit_converged", pl.Float64())
    converged = (
        pl.when(fit.is_not_null()).then(fit == 1)
        .when(stopped_by == "patience").then(pl.lit(True))
        .when(stopped_by.is_in(["cap", BEFORE_LEARNING])).then(pl.lit(False))
        .otherwise(pl.lit(None, pl.Boolean()))
    )  # fmt: skip
    return frame.with_columns(
        stopped_by.alias("stopped_by"),
        column("stopped_epoch", pl.Float64()).round().cast(pl.Int64).alias("stopped_epoch"),
        converged.alias("converged_run"),
    )


def trial_frame(runs: list[Run]) -> pl.DataFrame:
    """One row per tune trial: identity columns, `param.<dotted name>` columns, final metrics.

    A parameter column becomes Float64 when every value in it parses as a number.
    """
    params = sorted({PARAM_PREFIX + name for run in runs for name in run.data.params})

    def trial_columns(run: Run) -> dict[str, Any]:
        values = {PARAM_PREFIX + k: v for k, v in run.data.params.items()}
        return values | {"trial": run.data.tags.get(schema.TRIAL)}

    extra = {"trial": pl.String()} | {p: pl.String() for p in params}
    frame = _run_frame(runs, extra, trial_columns)
    return _numeric_params(frame, params).sort("dataset", "sampler", "method", "trial", "run_id")


def chosen_frame(runs: list[Run]) -> pl.DataFrame:
    """One row per tune parent run that chose a configuration: identity columns, the chosen values as
    `param.<dotted name>` columns (from the `nerplat.sampled` tag), and its `dev_best_<metric>`.

    Runs without the tag (a tuning that did not finish) are left out; a parameter column becomes
    Float64 when every value in it is a number.
    """
    chosen = {run.info.run_id: values for run in runs if (values := _sampled(run)) is not None}
    params = sorted({PARAM_PREFIX + name for values in chosen.values() for name in values})

    def chosen_columns(run: Run) -> dict[str, Any]:
        return {
            PARAM_PREFIX + name: value if isinstance(value, str) else json.dumps(value)
            for name, value in chosen[run.info.run_id].items()
        }

    frame = _run_frame([run for run in runs if run.info.run_id in chosen], {p: pl.String() for p in params}, chosen_columns)
    return _numeric_params(frame, params).sort("dataset", "sampler", "method", "arm", "run_id")


def _sampled(run: Run) -> dict[str, Any] | None:
    text = run.data.tags.get(schema.SAMPLED)
    if text is None:
        return None
    try:
        values = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserInputError(
            Problem(f"tag {schema.SAMPLED} of run {run.info.run_id} is not JSON: {error.msg}", path=schema.SAMPLED)
        ) from None
    if not isinstance(values, dict):
        raise UserInputError(Problem(f"tag {schema.SAMPLED} of run {run.info.run_id} is not a JSON object", path=schema.SAMPLED))
    return values


def _numeric_params(frame: pl.DataFrame, params: list[str]) -> pl.DataFrame:
    """`params` columns cast to Float64 where every value parses as a number."""
    numeric = []
    for column in params:
        try:
            frame[column].cast(pl.Float64, strict=True)
        except pl.exceptions.InvalidOperationError:
            continue
        numeric.append(column)
    return frame.with_columns(pl.col(numeric).cast(pl.Float64))


def epoch_frame(client: MlflowClient, runs: list[Run], metrics: tuple[str, ...] = CURVE_METRICS) -> pl.DataFrame:
    """One row per (run, metric, epoch): the per-epoch dev evaluations (logged with step = epoch).

    A step logged twice (a worker retried from its checkpoint) keeps its latest value.
    """
    steps = latest_steps(client, runs, metrics)
    columns = [list(c) for c in zip(*((*key, value) for key, value in steps.items()))] or [[], [], [], []]
    frame = pl.DataFrame(dict(zip(EPOCH_SCHEMA, columns)), schema=EPOCH_SCHEMA)
    return frame.sort("run_id", "metric", "epoch")


@dataclass(frozen=True)
class ExperimentRuns:
    """What the analysis reads from one experiment."""

    experiment_id: str
    replicates: pl.DataFrame
    trials: pl.DataFrame
    summary_run_id: str | None
    plan: dict | None
    epochs: pl.DataFrame  # per-epoch dev metrics of the replicate runs (`epoch_frame`)
    chosen: pl.DataFrame  # the configuration each tuned arm chose (`chosen_frame`)
    ignored: tuple[str, ...] = ()  # a warning naming runs left out as duplicates of a run key (`track/current_runs.py`)


def fetch_replicates(client: MlflowClient, name: str) -> pl.DataFrame:
    """The experiment's current replicate runs as a frame, and nothing else (no trials, no dev curves):
    what a sequential design's look reads."""
    experiment = find_experiment(client, name)
    current = current_runs(run for kind in ("arm", "replicate") for run in search_all(client, experiment.experiment_id, kind))
    return replicate_frame([run for run in current.kept if run.data.tags.get(schema.KIND) == "replicate"])


def fetch_experiment(client: MlflowClient, name: str) -> ExperimentRuns:
    experiment = find_experiment(client, name)
    summary = find_summary_run(client, experiment.experiment_id)
    current = current_runs(
        run for kind in ("arm", "replicate", "trial") for run in search_all(client, experiment.experiment_id, kind)
    )
    of_kind = lambda kind: [run for run in current.kept if run.data.tags.get(schema.KIND) == kind]  # noqa: E731
    replicates = of_kind("replicate")
    return ExperimentRuns(
        experiment_id=experiment.experiment_id,
        replicates=replicate_frame(replicates),
        trials=trial_frame(of_kind("trial")),
        summary_run_id=summary.info.run_id if summary else None,
        plan=read_plan(client, summary) if summary else None,
        epochs=epoch_frame(client, replicates),
        chosen=chosen_frame([run for run in of_kind("arm") if run.data.tags.get(schema.PHASE) == "tune"]),
        ignored=tuple(filter(None, [current.warning()])),
    )
