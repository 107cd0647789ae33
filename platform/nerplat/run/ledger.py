"""The run records of a `nerplat run`, written by the driver: one tracking path for both phases.

This module decides what is written to which run and when; `ExperimentTracker`
(track/experiment_tracker.py) makes the MLflow calls, and creates a named run exactly once. A trial
reports its evaluations and its final result to Ray Tune, and Tune's driver-side callback
(`run.events`) hands them to the ledger. The MLflow writes besides the ledger's: the report the
analysis logs on the summary run (`track/reports.py`), the model versions the driver registers from
an arm's replicates (`run/replicate_phase.py`), and a replicate's model, which its worker logs
(`run/trainable.py`; the one write from a worker). One rule for tuning trials and replicates alike:

1. open: a trial's run is created (or reopened) before the trial's first report. A replicate's run is
   opened by the runner before its Tuner starts, so a finished replicate is skipped and a changed
   spec refused before any training; a tuning trial's run when Tune starts the trial, named in
   start order (`t0000`, `t0001`, ..., continuing after the trials of an earlier session).
2. log: an evaluation is logged once it is durable: at once when no checkpoint comes with it, else
   once Tune has registered that checkpoint. A worker lost in between is retried from the previous
   checkpoint and repeats the epoch, which is then logged once.
3. result: a trial's final result (test metrics, predictions, data checksums and notes) arrives in
   its last report and is logged to its run.
4. close: the run ends with the trial's outcome: `completed` (all epochs, stopped by its own
   `train.early_stopping`, or a final result),
   `early_stopped` (the scheduler stopped it), `failed` (after the allowed retries), or
   `interrupted` (the Tuner stopped while it ran). The run's end (its MLflow status) is the record
   that the trial finished; a tuning search's Optuna study is told only after it (run/study.py).
   A run left RUNNING by a driver that died, its `nerplat.status` tag written or not, is marked
   interrupted when its parent's children are next read (`finished_trials`), so `--resume` replaces
   it; a run a dying driver created but never claimed is deleted then.

Arm parents and the summary run are written by the runner through the same ledger. The summary
run's bookkeeping run carries the experiment's lease (`track/lease.py`): a second driver of the same
experiment is refused before it writes anything.

What people see in MLflow's runs table is written here too: the experiment's view (`track/view.py`),
the configuration each tune phase chose as params of its arm run, the best trial's tag, and the
mean and sd over replicates of every test metric on the replicate phase's arm run.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from typing import Any

from nerplat.kill_points import kill_point
from nerplat.metrics import METRIC_NAMES
from nerplat.plan.model import Arm, Plan, Replicate
from nerplat.run.job import SAMPLE_INDEX_KEY, TrialJob
from nerplat.run.spec_change import SpecChange
from nerplat.run.trial_choice import FinishedTrial, InterruptedTrial, legacy_sample_indexes
from nerplat.serving.mlflow_models import unregister_run
from nerplat.track import schema
from nerplat.track.lease import ExperimentLease
from nerplat.run_keys import replicate_run_name
from nerplat.track.params import flatten_params
from nerplat.track.experiment_tracker import ExperimentTracker, TrackedRun
from nerplat.trial.results import Evaluation, TrialResult

FINISHED_TRIAL_STATUSES = ("completed", "early_stopped")


def arm_tags(arm: Arm) -> dict[str, str]:
    return {
        schema.ARM: arm.id,
        schema.DATASET: arm.dataset,
        schema.SAMPLER: arm.sampler_description,
        schema.METHOD: arm.method,
        schema.OBJECTIVE: arm.objective,
        schema.HEAD: arm.head,
        schema.ENCODER: arm.fixed["encoder"]["name"],
    }


def runs_view_columns(plan: Plan) -> dict[str, list[str]]:
    """The columns of the experiment's runs table (`track/view.py`): every searched hyper-parameter,
    the dev metric runs select on (best), the headline F1 of the replicates with its mean and sd, status and best trial."""
    headline = f"{plan.replicate_split}_{plan.analysis.average}_f1"
    metrics = [schema.best_key("dev", plan.select_metric), headline, schema.mean_key(headline), schema.sd_key(headline)]
    params = list(dict.fromkeys(key for arm in plan.arms for key in arm.search_space))
    return {"params": params, "metrics": metrics, "tags": [schema.STATUS, schema.BEST_TRIAL]}


@dataclass
class OpenRun:
    """The MLflow run of a Tune trial between its start and its end."""

    run_id: str
    name: str  # the run's MLflow name
    epochs: int
    tuning: bool  # a tuning trial (else a replicate)
    last_epoch: int = 0
    stopped_by: str | None = None  # said by the evaluation that ended the trial (`trial.stopping`)
    has_result: bool = False
    node: str | None = None
    pending: Evaluation | None = None  # waits for the checkpoint saved with it


class RunLedger:
    """The MLflow runs of one experiment; trial runs are keyed by Tune trial id while open."""

    def __init__(self, tracker: ExperimentTracker):
        self.tracker = tracker
        self.open: dict[str, OpenRun] = {}
        self._trial_numbers: dict[str, int] = {}  # tune parent run id -> number of the next trial
        self.lease: ExperimentLease | None = None
        self.open_phases: set[str] = set()  # arm parent runs started and not yet finished

    def __getstate__(self) -> dict:
        # Tune pickles its callbacks, and with them this ledger, into its experiment state; the
        # lease's heartbeat thread cannot be pickled, and the pickled copy never runs.
        return {**self.__dict__, "lease": None}

    # -- experiment and arm runs --------------------------------------------------------------

    def start_summary(
        self, plan: Plan, plugin_files: Sequence[Mapping[str, str]] = (), change: SpecChange | None = None
    ) -> TrackedRun:
        """The summary run, leased to this driver (UserInputError while another holds it), then its
        artifacts: written when the run is new or unfinished, or when a resume changed the spec (the
        earlier plan then stays as `superseded/<sha>/plan.json`)."""
        run = self.tracker.summary_run()
        bookkeeping = self.tracker.bookkeeping_run_id(run.run_id)
        self.lease = ExperimentLease(self.tracker.tracking_uri, self.tracker.client, bookkeeping, plan.experiment)
        self.lease.acquire()
        self.tracker.show_runs_view(**runs_view_columns(plan))
        if change is not None:
            self.tracker.record_superseded_plan(run.run_id, change.earlier, change.started_with, plan.spec_sha256)
        if not run.finished or change is not None:
            self.tracker.log_summary_artifacts(run.run_id, plan.model_dump(mode="json"), plan.resolved_spec, plugin_files)
        return run

    def retire_arms(self, arms: tuple[str, ...]) -> tuple[int, int]:
        """Deletes the runs of these arms (a resumed spec changed or dropped them) and the model versions
        registered from them, so they run anew and no analysis mixes them in; returns (runs, versions)."""
        runs = versions = 0
        for arm in arms:
            for run in self.tracker.edits.arm_runs(arm):
                if run.data.tags.get(schema.KIND) == "replicate":
                    versions += unregister_run(self.tracker.tracking_uri, run.info.run_id)
                self.tracker.edits.delete_run(run.info.run_id)
                runs += 1
        return runs, versions

    def finish_summary(self, run_id: str, status: str) -> None:
        """Ends the summary run and frees the experiment for the next driver."""
        try:
            self.finish(run_id, status)
        finally:
            self.release()

    def release(self) -> None:
        if self.lease is not None:
            self.lease.release()

    def start_phase(self, arm: Arm, phase: str, *, params: Any, tags: dict[str, str] | None = None) -> TrackedRun:
        """The parent run of an arm's tune or replicate phase."""
        run = self.tracker.start_arm_run(arm.id, phase, tags={**arm_tags(arm), **(tags or {})}, params=params, label=arm.label)
        if not run.finished:
            self.open_phases.add(run.run_id)
        return run

    def record_choice(self, tune_run_id: str, chosen: FinishedTrial, metric: str) -> None:
        """The trial the tune phase chose: its values on the parent run (as params too, so the runs
        table shows them) and the `nerplat.best_trial` tag on its own run, and on no other (an
        earlier nerplat may have tagged another of tied trials)."""
        self.tracker.edits.add_params(tune_run_id, flatten_params(chosen.values))
        self.tracker.log_epoch(tune_run_id, {metric: chosen.value}, epoch=0, tags={schema.SAMPLED: json.dumps(chosen.values)})
        self.tracker.edits.mark_best_trial(tune_run_id, chosen.run_id)

    def record_replicate_summary(self, replicate_run_id: str, split: str) -> None:
        """Mean and sd (ddof 1, from two replicates on) of each scalar `split` metric over the completed
        replicates, on the replicate phase's arm run: `<metric>_mean`, `<metric>_sd`."""
        completed = [run for run in self.children(replicate_run_id) if run.data.tags.get(schema.STATUS) == "completed"]
        summary = {}
        for name in METRIC_NAMES:
            key = schema.metric_key(split, name)
            values = [run.data.metrics[key] for run in completed if key in run.data.metrics]
            if values:
                summary[schema.mean_key(key)] = statistics.fmean(values)
            if len(values) > 1:
                summary[schema.sd_key(key)] = statistics.stdev(values)
        if summary:
            self.tracker.log_epoch(replicate_run_id, summary, epoch=0)

    def finish(self, run_id: str, status: str) -> None:
        self.tracker.finish(run_id, status)
        self.open_phases.discard(run_id)

    def interrupt_phases(self) -> None:
        """Marks the arm parent runs still open `interrupted` (the run was stopped in their phase)."""
        for run_id in sorted(self.open_phases):
            self.finish(run_id, "interrupted")

    # -- trial and replicate runs -------------------------------------------------------------

    def open_replicate(self, replicate_run_id: str, arm: Arm, replicate: Replicate, config: Any) -> TrackedRun:
        """A replicate's run, before its Tuner starts; `finished` tells the runner to skip it."""
        tags = {**arm_tags(arm), schema.SEED: replicate.seed, schema.PARTITION: replicate.partition}
        return self.tracker.start_replicate_run(
            replicate_run_id, arm.id, replicate.seed, replicate.partition,
            tags=tags, params=config.model_dump(mode="json"), label=arm.label,
        )

    def start_trial(self, trial_id: str, job: TrialJob, config: dict[str, Any]) -> OpenRun:
        """Tune started `trial_id` with this Tune config: adopts the replicate run the runner opened,
        or opens the next tuning trial's run. A trial Tune starts again after a failure keeps its run."""
        if trial_id in self.open:
            return self.open[trial_id]
        if job.run_id is not None:
            run_id, name = job.run_id, replicate_run_name(job.arm.label, job.seed, job.partition)
        else:
            number = self._trial_numbers.get(job.parent_run_id)
            if number is None:
                number = len(self.children(job.parent_run_id))
            self._trial_numbers[job.parent_run_id] = number + 1
            sampled = job.searched_values(config)
            tags = {
                **arm_tags(job.arm), schema.SEED: job.seed, schema.PARTITION: job.partition, schema.SAMPLED: json.dumps(sampled)
            }
            if config.get(SAMPLE_INDEX_KEY) is not None:  # given by the searcher (run.study_search)
                tags[schema.SAMPLE_INDEX] = config[SAMPLE_INDEX_KEY]
            params = job.trial_config(config).model_dump(mode="json")
            run = self.tracker.start_trial_run(
                job.parent_run_id, job.arm.id, f"t{number:04d}", tags=tags, params=params, label=job.arm.label
            )
            run_id, name = run.run_id, run.name
        self.open[trial_id] = OpenRun(run_id, name, epochs=int(job.arm.fixed["train"]["epochs"]), tuning=job.run_id is None)
        if job.run_id is None:
            kill_point("trial_start")
        return self.open[trial_id]

    def run_name(self, trial_id: str) -> str:
        """The MLflow run name of an open trial."""
        return self.open[trial_id].name

    def record_node(self, trial_id: str, node: str, worker: dict[str, str]) -> None:
        """The Ray node the trial runs on and how its worker runs it (`run.job.WORKER_TAGS`: allocator,
        arithmetic, device), tagged again when a retry moves it."""
        run = self.open.get(trial_id)
        if run is not None and node and node != run.node:
            run.node = node
            self.tracker.edits.set_tags(run.run_id, {schema.RAY_NODE: node, **worker})

    def record_evaluation(self, trial_id: str, evaluation: Evaluation, *, awaits_checkpoint: bool) -> None:
        run = self.open.get(trial_id)
        if run is None:
            return
        run.last_epoch, run.stopped_by = evaluation.epoch, evaluation.stopped_by
        if awaits_checkpoint:
            run.pending = evaluation
        else:
            self._log_evaluation(run.run_id, evaluation)

    def checkpoint_registered(self, trial_id: str) -> None:
        run = self.open.get(trial_id)
        if run is not None:
            self._log_pending(run)

    def retrying(self, trial_id: str) -> None:
        """The trial restarts from its last registered checkpoint: its pending evaluation will be repeated."""
        run = self.open.get(trial_id)
        if run is not None:
            run.pending = None

    def record_result(self, trial_id: str, result: TrialResult) -> None:
        """The trial's final evaluation: metrics at the selected epoch, predictions, data checksums, notes."""
        run = self.open.get(trial_id)
        if run is None:
            return
        run.has_result = True
        final = {
            **result.metrics,
            "train_sentences": float(result.train_sentences),
            "train_size_factor": result.size_factor,
            "selected_epoch": float(result.selected_epoch),
            "trial_seconds": result.timings.total,
        }
        tags = {schema.SIZE: result.train_sentences}
        if result.fit_converged is not None:
            final["fit_converged"] = float(result.fit_converged)
        if result.stopped_by is not None and not result.evaluations:  # else its last evaluation logged them
            final["stopped_epoch"] = float(result.stopped_epoch)
            tags[schema.STOPPED_BY] = result.stopped_by
        self.tracker.log_epoch(run.run_id, final, epoch=result.selected_epoch, tags=tags)
        if result.predictions:
            tokens = [list(sentence.tokens) for sentence, _ in result.predictions]
            gold = [list(sentence.tags) for sentence, _ in result.predictions]
            self.tracker.log_predictions(run.run_id, tokens, gold, [list(p) for _, p in result.predictions])
        self.tracker.log_data_checksums(run.run_id, result.data_checksums)
        if result.notes:
            self.tracker.log_data_notes(run.run_id, result.notes)

    def end(self, trial_id: str, *, failed: bool) -> str | None:
        """Closes the trial's run; returns its status (None if the trial had no open run).

        A trial that ends is not retried, so its last evaluation stands even without its checkpoint.
        """
        run = self.open.pop(trial_id, None)
        if run is None:
            return None
        self._log_pending(run)
        if failed:
            status = "failed"
        else:
            # A trial its own early stopping ended is complete; one the scheduler cut (ASHA) is not.
            finished = run.has_result or run.stopped_by is not None or run.last_epoch >= run.epochs
            status = "completed" if finished else "early_stopped"
        self.tracker.finish(run.run_id, status)
        kill_point("mlflow_finish" if run.tuning else "replicate")
        return status

    def interrupt_open(self) -> list[str]:
        """Closes every run still open as `interrupted`; returns the Tune trial ids."""
        interrupted = list(self.open)
        for trial_id in interrupted:
            run = self.open.pop(trial_id)
            self._log_pending(run)
            self.tracker.finish(run.run_id, "interrupted")
        return interrupted

    def _log_pending(self, run: OpenRun) -> None:
        if run.pending is not None:
            evaluation, run.pending = run.pending, None
            self._log_evaluation(run.run_id, evaluation)

    def _log_evaluation(self, run_id: str, evaluation: Evaluation) -> None:
        """The evaluation's metrics at its epoch; the one that ended the trial also gives the tag
        `nerplat.stopped_by` and the metric `stopped_epoch` (the last trained epoch)."""
        metrics, tags = evaluation.metrics(), None
        if evaluation.stopped_by is not None:
            metrics["stopped_epoch"] = float(evaluation.epoch)
            tags = {schema.STOPPED_BY: evaluation.stopped_by}
        self.tracker.log_epoch(run_id, metrics, evaluation.epoch, tags=tags)

    # -- children of a parent run (resume) -------------------------------------------------

    def children(self, parent_run_id: str) -> list[Any]:
        return self.tracker.edits.child_runs(parent_run_id)

    def finished_earlier(self, arm: Arm, phase: str) -> int:
        """How many of the arm's tuning trials (phase `tune`) or replicates (`replicate`) an earlier
        session finished: a resumed run counts them done from its start, so its ETA leaves them out."""
        parent = self.tracker.find_arm_run(arm.id, phase)
        if parent is None:
            return 0
        done = FINISHED_TRIAL_STATUSES if phase == "tune" else ("completed",)
        return sum(_ended(run) and run.data.tags.get(schema.STATUS) in done for run in self.children(parent.info.run_id))

    def phase_completed(self, arm: Arm, phase: str) -> bool:
        """Whether an earlier session completed the arm's `tune` or `replicate` phase: its parent run
        ended `completed` (a choice recorded; every replicate asked for completed)."""
        parent = self.tracker.find_arm_run(arm.id, phase)
        return parent is not None and _ended(parent) and parent.data.tags.get(schema.STATUS) == "completed"

    def finished_trials(self, parent_run_id: str, metric: str) -> list[FinishedTrial]:
        """The finished tuning trials under a tune parent, with their value of `metric` and their
        sample index (run/trial_choice.py).

        Children left RUNNING by a driver that died (killed before their status tag, or between the
        tag and the run's end) are marked interrupted here, since nothing will finish them now; only
        a run's end says it finished. A child without a kind tag was created by a driver killed
        before it claimed the run (track/experiment_tracker.py): no search finds it, and its name would otherwise
        never be claimed again, so it is deleted.
        """
        runs, changed = self.children(parent_run_id), False
        for run in runs:
            if schema.KIND not in run.data.tags:
                self.tracker.edits.delete_run(run.info.run_id)
            elif run.info.status == "RUNNING" and run.info.run_id not in self._open_run_ids():
                self.tracker.finish(run.info.run_id, "interrupted")
            else:
                continue
            changed = True
        return _finished(self.children(parent_run_id) if changed else runs, metric)

    def interrupted_trials(self, parent_run_id: str) -> list[InterruptedTrial]:
        """The tuning trials under a tune parent that ended `interrupted` (Ctrl-C, a spent time budget,
        or a driver that died: `finished_trials` marks those, so call it first), in their sampling
        order: a resumed search runs each one's point again, in that order and with its sample index
        (run/study.py, `enqueue_unfinished`)."""
        runs = self.children(parent_run_id)
        indexes = sample_indexes(runs)
        interrupted = [
            InterruptedTrial(json.loads(run.data.tags[schema.SAMPLED]), run.info.run_id, indexes[run.info.run_id])
            for run in runs
            if _ended(run) and run.data.tags.get(schema.STATUS) == "interrupted" and schema.SAMPLED in run.data.tags
        ]
        return sorted(interrupted, key=lambda trial: trial.sample_index)

    def taken_sample_indexes(self, parent_run_id: str) -> frozenset[int]:
        """The sample indexes the tune parent's trial runs hold, whatever their end: a new trial takes another."""
        return frozenset(sample_indexes(self.children(parent_run_id)).values())

    def recorded_choice(self, arm: Arm, metric: str) -> FinishedTrial | None:
        """What the arm's completed tune phase chose, as it recorded it (read only): the finished trial
        tagged `nerplat.best_trial` whose point is the tune run's `nerplat.sampled`; None when the
        record lacks either."""
        parent = self.tracker.find_arm_run(arm.id, "tune")
        chosen = _sampled(parent) if parent is not None else None
        if chosen is None:
            return None
        runs = self.children(parent.info.run_id)
        best = {run.info.run_id for run in runs if run.data.tags.get(schema.BEST_TRIAL) == "true"}
        return next((trial for trial in _finished(runs, metric) if trial.run_id in best and trial.values == chosen), None)

    def replicated_choice(self, arm: Arm) -> dict[str, Any] | None:
        """The configuration the arm's replicate phase was started with (its `nerplat.sampled`), if it was."""
        parent = self.tracker.find_arm_run(arm.id, "replicate")
        return _sampled(parent) if parent is not None else None

    def statuses(self, parent_run_id: str) -> dict[str, int]:
        """How many children of a parent run ended with each status (`running` when none yet)."""
        counts: dict[str, int] = {}
        for run in self.children(parent_run_id):
            status = run.data.tags.get(schema.STATUS, "running")
            counts[status] = counts.get(status, 0) + 1
        return counts

    def _open_run_ids(self) -> set[str]:
        return {run.run_id for run in self.open.values()}


def _ended(run: Any) -> bool:
    """Whether an MLflow run has ended: its status tag alone may be left by a driver killed before the end."""
    return run.info.status != "RUNNING"


def _sampled(run: Any) -> dict[str, Any] | None:
    """A run's `nerplat.sampled` as a dict; None when it has none, or none that reads as one."""
    try:
        values = json.loads(run.data.tags.get(schema.SAMPLED, ""))
    except ValueError:
        return None
    return values if isinstance(values, dict) else None


def sample_indexes(runs: Sequence[Any]) -> dict[str, int]:
    """The sample index of each tuning trial run among `runs` (`nerplat.sample_index`; runs an earlier
    nerplat wrote without one are placed first, in start order: `trial_choice.legacy_sample_indexes`)."""
    trials = sorted(
        (run for run in runs if run.data.tags.get(schema.KIND) == "trial"),
        key=lambda run: (run.info.start_time or 0, run.info.run_name or ""),
    )
    recorded = [int(run.data.tags[schema.SAMPLE_INDEX]) if schema.SAMPLE_INDEX in run.data.tags else None for run in trials]
    return dict(zip((run.info.run_id for run in trials), legacy_sample_indexes(recorded)))


def _finished(runs: Sequence[Any], metric: str) -> list[FinishedTrial]:
    """The finished tuning trials among a tune parent's `runs`, in their sampling order."""
    indexes = sample_indexes(runs)
    found = [
        FinishedTrial(
            json.loads(run.data.tags[schema.SAMPLED]), run.data.metrics[metric], run.info.run_id, run.info.run_name,
            indexes[run.info.run_id],
        )
        for run in runs
        if run.info.run_id in indexes and _ended(run) and run.data.tags.get(schema.STATUS) in FINISHED_TRIAL_STATUSES
        and metric in run.data.metrics and schema.SAMPLED in run.data.tags
    ]
    return sorted(found, key=lambda trial: trial.sample_index)
