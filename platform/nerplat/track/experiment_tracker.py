"""One spec experiment in MLflow: keyed runs that resume instead of duplicating, logged by run id.

Layout: one MLflow experiment per spec experiment; a parent run per (arm, phase); a child run per
tuning trial and per replicate; one summary run (keys and names in `run_keys.py`, tags and
metric names in `track/schema.py`). Every call goes through `MlflowClient` with an explicit run id;
nothing uses MLflow's global active run, because trials log from several Ray worker processes at once.

Creating a run by key without duplicates is `track/run_claims.py`'s: child runs are claimed on a
bookkeeping run. Searches and edits of existing runs are `track/run_edits.py`'s (`tracker.edits`).

The claims are params, but not the parent's: params are what MLflow's runs table offers as
columns and what a run's page lists first, and people look there for hyper-parameters. Each top-level
run is born with a bookkeeping run in a companion experiment (`<experiment> · nerplat
bookkeeping`), named by its `nerplat.bookkeeping_run` tag; the claims of an arm run's children
and the lease of the summary run (`track/lease.py`) are params of that run. A run without the tag
(written before it existed, or by `nerplat analyze` alone) is its own bookkeeping run.

Top-level runs (arm parents and the summary) have no parent to claim on. They are created by the
single driver of an experiment (`nerplat run`), found by a search on key and kind, and
never created from workers. So the runner's contract is:

- driver: `ExperimentTracker.open`, `start_summary_run`, `start_arm_run`, and (for replicates it
  runs itself or hands to workers) `start_replicate_run`; `finish` on what it started;
- other processes may `start_trial_run` / `start_replicate_run` under a parent run id they were
  given, then `log_epoch`, artifacts and `finish` on their own run id. The tracker pickles without
  its client, so it can travel in a Ray config. (`nerplat run` itself creates and logs runs only
  from its driver, through `run/ledger.py`; a replicate's worker adds only its model,
  `run/trainable.py`; the claims keep concurrent creators safe all the same.)

Resume: `start_*` return a `TrackedRun`; `finished=True` means a run with that key already
completed (status in `status`) and the work can be skipped; otherwise the same run is reopened
(status RUNNING, old `nerplat.status` cleared) and epochs logged again add points at the same steps.
Params are immutable in MLflow: resuming with different params (the spec changed) is refused.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nerplat.errors import UserInputError
from nerplat.kill_points import kill_point
from nerplat.track import schema
from nerplat.track.current_runs import CurrentRuns
from nerplat.track.environment import environment_report
from nerplat.track.dataset_inputs import InputFile, dataset_inputs
from nerplat.run_keys import (
    SUMMARY_RUN_KEY,
    SUMMARY_RUN_NAME,
    arm_run_key,
    arm_run_name,
    replicate_run_key,
    replicate_run_name,
    trial_run_key,
    trial_run_name,
)
from nerplat.track.params import flatten_params, to_plain
from nerplat.track.predictions import write_conll_predictions
from nerplat.track.run_claims import ChildRunClaims, log_params, rewrite_on_race
from nerplat.track.run_edits import RunEdits
from nerplat.track.store import PatientClient, check_store, is_server_uri, local_artifact_root
from nerplat.track.view import EXPERIMENT_KIND_TAG, HIDDEN_EXPERIMENT_TAG, MODEL_TRAINING, runs_view_tag

# nerplat status -> MLflow run status. Early-stopped trials ran correctly, so MLflow calls them
# FINISHED; the nerplat.status tag is what tells them apart.
MLFLOW_STATUS = {"completed": "FINISHED", "early_stopped": "FINISHED", "failed": "FAILED", "interrupted": "KILLED"}
BOOKKEEPING_EXPERIMENT_SUFFIX = " · nerplat bookkeeping"  # the companion experiment of bookkeeping runs


@dataclass(frozen=True)
class TrackedRun:
    run_id: str
    key: str
    name: str
    resumed: bool  # the run existed before this call
    finished: bool  # it had already completed (or was early-stopped): skip the work
    status: str | None  # its nerplat.status when finished


class ExperimentTracker:
    """Runs of one spec experiment in one MLflow store.

    Build it with `open` in the driver; pass it to workers as is (it pickles without its client).
    """

    def __init__(
        self,
        tracking_uri: str,
        experiment_id: str,
        experiment_name: str,
        run_tags: Mapping[str, str] | None = None,
        environment: Mapping[str, Any] | None = None,
    ):
        self.tracking_uri = tracking_uri
        self.experiment_id = experiment_id
        self.experiment_name = experiment_name
        self.run_tags = dict(run_tags or {})  # added to every run (git commit, spec hash)
        self.environment = dict(environment or {})
        self._client = None
        self._bookkeeping_experiment_id: str | None = None
        self._bookkeeping_runs: dict[str, str] = {}  # run id -> its bookkeeping run's id
        self.inputs: dict[str, tuple[InputFile, ...]] = {}  # arm id -> the files its runs read (track/dataset_inputs.py)
        self._named_duplicates: set[str] = set()  # keys of arm runs whose restored duplicates were named

    @classmethod
    def open(
        cls,
        tracking_uri: str,
        experiment_name: str,
        *,
        spec_sha256: str | None = None,
        timeout: float = 5.0,
    ) -> ExperimentTracker:
        """Checks the store (fails fast if a server is down), then gets or creates the experiment."""
        check_store(tracking_uri, timeout=timeout)
        environment = environment_report()
        run_tags = {}
        if environment["git"] is not None:
            run_tags[schema.GIT_COMMIT] = environment["git"]["commit"]
            run_tags[schema.GIT_DIRTY] = str(environment["git"]["dirty"]).lower()
        if spec_sha256:
            run_tags[schema.SPEC_SHA] = spec_sha256
        tracker = cls(tracking_uri, "", experiment_name, run_tags, environment)
        tracker.experiment_id = tracker._get_or_create_experiment(
            experiment_name, {schema.EXPERIMENT: experiment_name, EXPERIMENT_KIND_TAG: MODEL_TRAINING}
        )
        return tracker

    @property
    def client(self):
        if self._client is None:
            from mlflow import MlflowClient

            # Otherwise every finished run prints two "View run at" lines into the progress view.
            os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
            os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # a driver reads plan.json on resume
            self._client = MlflowClient(tracking_uri=self.tracking_uri)
            if is_server_uri(self.tracking_uri):
                self._client = PatientClient(self._client, self.tracking_uri, self.notify)
        return self._client

    @property
    def edits(self) -> RunEdits:
        """Searches and edits of the experiment's existing runs, on the current client (which is made on
        first use and left out of a pickled tracker, so the helper is made on use too)."""
        return RunEdits(self.client, self.experiment_id)

    def notify(self, message: str) -> None:
        """Where store retries are announced; the runner points it at its console."""
        print(message, file=sys.stderr, flush=True)

    def __getstate__(self) -> dict:
        state = {**self.__dict__, "_client": None}
        state.pop("notify", None)  # a driver's console (not picklable) stays with the driver
        return state

    # -- runs -------------------------------------------------------------------------------

    def start_summary_run(self, plan: Any, resolved_spec: Any, tags: Mapping[str, Any] | None = None) -> TrackedRun:
        """The experiment's summary run, with the plan, the resolved spec and the environment."""
        run = self.summary_run(tags)
        if not run.finished:
            self.log_summary_artifacts(run.run_id, plan, resolved_spec)
        return run

    def summary_run(self, tags: Mapping[str, Any] | None = None) -> TrackedRun:
        """Finds or creates the summary run. Two drivers creating it at once each keep the older of
        the two (by start time, then id) and delete their own if it is the younger."""
        def start() -> TrackedRun:
            return self.start_or_resume_run(SUMMARY_RUN_KEY, name=SUMMARY_RUN_NAME, kind="summary", phase="summary", tags=tags)

        run = start()
        if run.resumed:
            return run
        oldest = self.find_summary_run()
        if oldest is not None and oldest.info.run_id != run.run_id:
            self.client.delete_run(run.run_id)
            return start()
        return run

    def find_summary_run(self):
        """The experiment's summary run (an MLflow `Run`), or None before the first `nerplat run`."""
        return self._find_top_level_run(SUMMARY_RUN_KEY, "summary")

    def log_summary_artifacts(
        self, run_id: str, plan: Any, resolved_spec: Any, plugin_files: Sequence[Mapping[str, str]] = ()
    ) -> None:
        """The plan, the resolved spec, the environment and, when there are any, the plugin files
        the run imports (with their sha256) on the summary run."""
        self.client.log_dict(run_id, to_plain(plan), schema.PLAN_ARTIFACT)
        if isinstance(resolved_spec, str):
            self.client.log_text(run_id, resolved_spec, schema.RESOLVED_SPEC_ARTIFACT)
        else:
            self.client.log_dict(run_id, to_plain(resolved_spec), schema.RESOLVED_SPEC_ARTIFACT)
        self.client.log_dict(run_id, self.environment, schema.ENVIRONMENT_ARTIFACT)
        if plugin_files:
            self.client.log_dict(run_id, [dict(record) for record in plugin_files], schema.PLUGIN_FILES_ARTIFACT)

    def record_superseded_plan(self, run_id: str, earlier_plan: Mapping[str, Any], started_with: str, spec_sha256: str) -> None:
        """A resume under a changed spec: the plan the experiment ran until now stays on the summary
        run as `superseded/<its spec sha256[:12]>/plan.json`, and the run's spec tag becomes the new
        spec's (a finished run is not reopened with the new tags)."""
        self.client.log_dict(run_id, dict(earlier_plan), f"superseded/{started_with[:12]}/{schema.PLAN_ARTIFACT}")
        self.client.set_tag(run_id, schema.SPEC_SHA, spec_sha256)

    def show_runs_view(self, params: Sequence[str], metrics: Sequence[str], tags: Sequence[str]) -> None:
        """MLflow's runs table of the experiment shows these params, metrics and run tags as columns (`track/view.py`)."""
        self.client.set_experiment_tag(self.experiment_id, *runs_view_tag(params, metrics, tags))

    def start_arm_run(
        self, arm: str, phase: str, tags: Mapping[str, Any] | None = None, params: Any = None, *, label: str | None = None
    ) -> TrackedRun:
        """The parent run of one arm's tune or replicate phase (driver only). `label` is the arm's
        short label (`Arm.label`) that names its runs; the arm id when not given."""
        return self.start_or_resume_run(
            arm_run_key(arm, phase),
            name=arm_run_name(label or arm, phase),
            kind="arm",
            phase=phase,
            tags={schema.ARM: arm, **(tags or {})},
            params=params,
        )

    def find_arm_run(self, arm: str, phase: str):
        """The parent run of an arm's phase (an MLflow `Run`), or None before the phase first started."""
        return self._find_top_level_run(arm_run_key(arm, phase), "arm")

    def start_trial_run(
        self,
        arm_run_id: str,
        arm: str,
        trial_id: str,
        tags: Mapping[str, Any] | None = None,
        params: Any = None,
        *,
        label: str | None = None,
    ) -> TrackedRun:
        """One tuning trial under its arm's tune run, recording what it reads; safe to call from any process."""
        return self._reading(arm, self.start_or_resume_run(
            trial_run_key(arm, trial_id),
            name=trial_run_name(label or arm, trial_id),
            kind="trial",
            phase="tune",
            parent_run_id=arm_run_id,
            tags={schema.ARM: arm, schema.TRIAL: trial_id, **(tags or {})},
            params=params,
        ))

    def start_replicate_run(
        self,
        arm_run_id: str,
        arm: str,
        seed: int,
        partition: int,
        tags: Mapping[str, Any] | None = None,
        params: Any = None,
        *,
        label: str | None = None,
    ) -> TrackedRun:
        """One replicate (seed, partition) under its arm's replicate run, recording what it reads; safe
        from any process."""
        return self._reading(arm, self.start_or_resume_run(
            replicate_run_key(arm, seed, partition),
            name=replicate_run_name(label or arm, seed, partition),
            kind="replicate",
            phase="replicate",
            parent_run_id=arm_run_id,
            tags={schema.ARM: arm, schema.SEED: seed, schema.PARTITION: partition, **(tags or {})},
            params=params,
        ))

    def _reading(self, arm: str, run: TrackedRun) -> TrackedRun:
        """`run`, which is about to train, with the files of `arm` it reads logged as its inputs (a
        finished run keeps what it recorded)."""
        if not run.finished and self.inputs.get(arm):
            self.client.log_inputs(run.run_id, datasets=dataset_inputs(self.inputs[arm]))
        return run

    def start_or_resume_run(
        self,
        key: str,
        *,
        name: str | None = None,
        kind: str,
        phase: str,
        parent_run_id: str | None = None,
        tags: Mapping[str, Any] | None = None,
        params: Any = None,
    ) -> TrackedRun:
        """Finds the run keyed `key` (under `parent_run_id`) or creates it, called `name` (default:
        the key); never duplicates it."""
        if kind not in schema.KINDS or phase not in schema.PHASES:
            raise ValueError(f"kind must be one of {schema.KINDS} and phase one of {schema.PHASES}")
        if (parent_run_id is None) != (kind in ("arm", "summary")):
            raise ValueError(f"{kind} runs {'need' if parent_run_id is None else 'take no'} parent run")
        run_tags = {
            **self.run_tags,
            schema.EXPERIMENT: self.experiment_name,
            schema.RUN_KEY: key,
            schema.KIND: kind,
            schema.PHASE: phase,
            **{key: str(value) for key, value in (tags or {}).items()},
        }
        flat_params = flatten_params(params) if params is not None else {}
        name = name or key
        if parent_run_id is None:
            run = self._find_top_level_run(key, kind)
            if run is None:
                return _new(key, self._create_top_level_run(name, run_tags, flat_params))
        else:
            run_tags[schema.PARENT_RUN] = parent_run_id
            claims = ChildRunClaims(self.client, self.experiment_id)
            run, created = claims.claim(self.bookkeeping_run_id(parent_run_id), parent_run_id, key, name, run_tags, flat_params)
            if created:
                return _new(key, run)
        return self._reopen(key, run, run_tags, flat_params)

    def bookkeeping_run_id(self, run_id: str) -> str:
        """The run whose params hold the claims of `run_id`'s children, or its lease: the one its
        `nerplat.bookkeeping_run` tag names, else the run itself."""
        if run_id not in self._bookkeeping_runs:
            self._bookkeeping_runs[run_id] = self.client.get_run(run_id).data.tags.get(schema.BOOKKEEPING_RUN, run_id)
        return self._bookkeeping_runs[run_id]

    def log_epoch(self, run_id: str, metrics: Mapping[str, float], epoch: int, tags: Mapping[str, Any] | None = None) -> None:
        """Logs metrics with step = epoch (names: `track/schema.py`), and `tags` with them.

        One `log_batch` request per call: each request is a transaction with fixed costs in the store
        (`nerplat bench tracking`), and MLflow's client splits it only beyond 1,000 metrics or 100 tags.
        """
        from mlflow.entities import Metric, RunTag

        now = int(time.time() * 1000)
        self.client.log_batch(
            run_id,
            metrics=[Metric(key, float(value), now, int(epoch)) for key, value in metrics.items()],
            tags=[RunTag(key, str(value)) for key, value in (tags or {}).items()],
        )

    def finish(self, run_id: str, status: str) -> None:
        """Ends a run: `completed`, `early_stopped` (by the scheduler), `failed` or `interrupted`."""
        if status not in MLFLOW_STATUS:
            raise ValueError(f"status must be one of {tuple(MLFLOW_STATUS)}, not {status!r}")
        self.client.set_tag(run_id, schema.STATUS, status)
        kill_point("status_tag")  # a driver killed here leaves the tag on a RUNNING run: resume interrupts it
        self.client.set_terminated(run_id, MLFLOW_STATUS[status])

    # -- artifacts --------------------------------------------------------------------------

    def log_predictions(
        self, run_id: str, tokens: Sequence[Sequence[str]], gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]
    ) -> None:
        """Test predictions of a replicate as `predictions.conll` (TOKEN, GOLD, PRED per line)."""
        with tempfile.TemporaryDirectory(prefix="nerplat-predictions-") as folder:
            path = write_conll_predictions(Path(folder) / schema.PREDICTIONS_ARTIFACT, tokens, gold, pred)
            self.client.log_artifact(run_id, str(path))

    def log_data_checksums(self, run_id: str, checksums: Mapping[str, str]) -> None:
        """The sha256 of each data file an arm trained and evaluated on."""
        self.client.log_dict(run_id, dict(checksums), schema.DATA_CHECKSUMS_ARTIFACT)

    def log_data_notes(self, run_id: str, notes: Sequence[str]) -> None:
        """What the corpus layer and samplers did to the run's data (IOB1 conversion, carving, ...), a line each."""
        self.client.log_text(run_id, "\n".join(notes) + "\n", schema.DATA_NOTES_ARTIFACT)

    # -- internals --------------------------------------------------------------------------

    def _get_or_create_experiment(self, name: str, tags: Mapping[str, str]) -> str:
        """The active experiment `name`, created with `tags`; refused when deleted. An experiment
        created before nerplat set `mlflow.experimentKind` or hid its bookkeeping experiments gets
        those tags (a kind a user chose is kept)."""
        from mlflow.exceptions import MlflowException

        experiment = self.client.get_experiment_by_name(name)
        if experiment is None:
            root = local_artifact_root(self.tracking_uri)
            location = None if root is None else str(root / _folder_name(name))
            try:
                return self.client.create_experiment(name, artifact_location=location, tags=dict(tags))
            except MlflowException as error:  # another driver created it a moment ago
                if error.error_code != "RESOURCE_ALREADY_EXISTS":
                    raise
                experiment = self.client.get_experiment_by_name(name)
        if experiment.lifecycle_stage != "active":
            raise UserInputError(
                f"MLflow experiment {name!r} is deleted in {self.tracking_uri}: restore it with "
                f"`mlflow experiments restore --experiment-id {experiment.experiment_id}`, remove it for good with "
                "`mlflow gc`, or rename the spec's experiment"
            )
        for key in (EXPERIMENT_KIND_TAG, HIDDEN_EXPERIMENT_TAG):
            if key in tags and key not in experiment.tags:
                self.client.set_experiment_tag(experiment.experiment_id, key, tags[key])
        return experiment.experiment_id

    def _create_top_level_run(self, name: str, tags: Mapping[str, str], params: Mapping[str, str]):
        """A new arm or summary run, born with its bookkeeping run (a run killed between the two
        leaves only an unused bookkeeping run behind)."""
        bookkeeping = self._create_bookkeeping_run(tags[schema.RUN_KEY])
        run = self.client.create_run(self.experiment_id, run_name=name, tags={**tags, schema.BOOKKEEPING_RUN: bookkeeping})
        log_params(self.client, run.info.run_id, params)
        self._bookkeeping_runs[run.info.run_id] = bookkeeping
        return run

    def _create_bookkeeping_run(self, key: str) -> str:
        if self._bookkeeping_experiment_id is None:
            name = f"{self.experiment_name}{BOOKKEEPING_EXPERIMENT_SUFFIX}"
            note = f"What nerplat keeps for experiment '{self.experiment_name}': child run claims and the driver lease."
            tags = {schema.BOOKKEEPING_FOR: self.experiment_name, "mlflow.note.content": note, HIDDEN_EXPERIMENT_TAG: "true"}
            self._bookkeeping_experiment_id = self._get_or_create_experiment(name, tags)
        run = self.client.create_run(
            self._bookkeeping_experiment_id, run_name=key, tags={schema.EXPERIMENT: self.experiment_name, schema.RUN_KEY: key}
        )
        self.client.set_terminated(run.info.run_id)  # params and tags are still written to it; it never "runs"
        return run.info.run_id

    def _find_top_level_run(self, key: str, kind: str):
        """The active top-level run with this key and kind: the oldest summary run (two drivers creating
        it at once keep the older), the newest arm run (an older one was restored after `--rerun-changed`
        deleted it: `track/current_runs.py`, and is named once). Experiments written before keys became
        tags have the key as the run's name."""
        from mlflow.entities import ViewType

        for selector in (f"tags.`{schema.RUN_KEY}` = '{key}'", f"attributes.run_name = '{key}'"):
            runs = self.client.search_runs(
                [self.experiment_id],
                filter_string=f"{selector} and tags.`{schema.KIND}` = '{kind}'",
                run_view_type=ViewType.ACTIVE_ONLY,
                order_by=["attributes.start_time ASC"],
            )
            runs = sorted(
                (run for run in runs if schema.PARENT_RUN not in run.data.tags), key=lambda r: (r.info.start_time, r.info.run_id)
            )
            if runs and kind == "summary":
                return runs[0]
            if runs:
                if len(runs) > 1 and key not in self._named_duplicates:
                    self._named_duplicates.add(key)
                    self.notify(CurrentRuns(runs[-1:], runs[:-1]).warning() + f"; run {runs[-1].info.run_id} is continued")
                return runs[-1]
        return None

    def _reopen(self, key: str, run, tags: Mapping[str, str], params: Mapping[str, str]) -> TrackedRun:
        """An existing run: refused if its params differ; marked RUNNING again unless it finished."""
        from mlflow.entities import Param, RunTag

        existing = run.data.params
        changed = {key: (existing[key], value) for key, value in params.items() if existing.get(key, value) != value}
        if changed:
            details = ", ".join(f"{key}: {old!r} -> {new!r}" for key, (old, new) in sorted(changed.items())[:5])
            raise UserInputError(
                f"MLflow run {run.info.run_name!r} ({run.info.run_id}) was started with other parameters ({details}): "
                "the spec changed since; rename the spec's experiment to start afresh"
            )
        run_id = run.info.run_id
        if run.info.status == "FINISHED":
            return TrackedRun(
                run_id, key, run.info.run_name, resumed=True, finished=True, status=run.data.tags.get(schema.STATUS)
            )
        missing = [Param(key, value) for key, value in params.items() if key not in existing]
        rewrite_on_race(self.client.log_batch, run_id, [], missing, [RunTag(key, value) for key, value in tags.items()])
        if run.info.status != "RUNNING":
            self.client.update_run(run_id, status="RUNNING")
        if schema.STATUS in run.data.tags:
            self.client.delete_tag(run_id, schema.STATUS)
        return TrackedRun(run_id, key, run.info.run_name, resumed=True, finished=False, status=None)


def experiment_exists(tracking_uri: str, name: str) -> bool:
    """Whether the store (checked first: a server that is down fails fast) holds experiment `name`."""
    from mlflow import MlflowClient

    check_store(tracking_uri)
    return MlflowClient(tracking_uri).get_experiment_by_name(name) is not None


def _new(key: str, run) -> TrackedRun:
    return TrackedRun(run.info.run_id, key, run.info.run_name, resumed=False, finished=False, status=None)


def _folder_name(experiment_name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in experiment_name) or "experiment"
