"""`nerplat run`: a compiled plan becomes Ray Tune experiments, tracked in MLflow, then analysed.

Protocol (the papers'): per arm, tune on dev with the spec's searcher and scheduler, choose the
configuration with the best `dev_best_<metric>`, then re-train it for every replicate (seed x
partition) and score it on the replicate split. Arms without a search space go straight to their
replicates. All replicates of all arms run in one Tuner, so small arms fill idle CPUs.

Resume reads MLflow, not Ray's experiment state: finished trials and replicates are found by their
deterministic keys (run tags) and skipped; a tuning search continues the arm's Optuna study (the live view
optuna-dashboard shows, track/studies.py), brought in step with MLflow's finished trials first
(run/study.py); trials that were running when the driver stopped are marked interrupted, and
their points run again before the searcher draws new ones (counted once, as a clean run counts
them). This works the same after Ctrl-C, a killed driver, or on another cluster.

The phases are objects the runner holds, `run/tune_phase.py` and `run/replicate_phase.py`, built once
the ledger is open with what they share of the run (`run/phase_context.py`), Ray's side of the run among
it: the `TuneDriver` (`run/tune_driver.py`) that connects to Ray once and builds and runs their Tuners;
what a run returns is `run/outcomes.py`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from nerplat.analysis.report_folder import owned_files
from nerplat.errors import StorageError, UserInputError
from nerplat.kill_points import kill_point
from nerplat.plugins import files_record
from nerplat.plan.model import Plan
from nerplat.run.exported_metrics import TrialMetrics
from nerplat.run.inputs import arm_inputs, input_changes
from nerplat.run.ledger import RunLedger
from nerplat.run.outcomes import ArmOutcome, RunSummary
from nerplat.run.phase_context import PhaseContext
from nerplat.run.progress import DEFAULT_EVERY, ProgressBoard
from nerplat.run.ray_preflight import refuse_unusable_ray
from nerplat.run.ray_session import (
    Interrupted,
    configure_ray_environment,
    is_local,
    path_component,
    quiet_library_logs,
    treat_sigterm_as_ctrl_c,
)
from nerplat.run.replicate_phase import ReplicatePhase
from nerplat.run.spec_change import SpecChange, spec_change
from nerplat.run.tune_driver import TuneDriver
from nerplat.run.tune_phase import TunePhase
from nerplat.serving.files import check_writable_folder
from nerplat.track import schema
from nerplat.track.current_runs import current_runs
from nerplat.track.experiment_reader import read_plan, search_all
from nerplat.track.experiment_tracker import ExperimentTracker, experiment_exists
from nerplat.track.lease import ExperimentLease
from nerplat.track.store import StoreLost, local_artifact_root, resolve_tracking_uri, sqlite_path, store_errors
from nerplat.track.studies import open_optuna_storage, resolve_optuna_storage


@dataclass
class RunOptions:
    workdir: Path
    resume: bool = False
    rerun_changed: bool = False  # with resume: run anew the arms a changed spec changes (run/spec_change.py)
    address: str | None = None
    storage: str | None = None  # Ray Tune storage_path; default <workdir>/.nerplat/ray
    analyze: bool = True
    replicate: bool = True  # False: tune only; a later --resume runs the replicates
    report_dir: Path | None = None  # default <workdir>/reports/<experiment>
    verbose: bool = False
    progress_every: float = DEFAULT_EVERY  # seconds between status lines when the console is not a terminal
    metrics_port: int | None = None  # embedded Ray's Prometheus endpoint on 127.0.0.1 (default: a free port)
    undecidable: frozenset[str] = frozenset()  # claims whose arms stop after the first look (`analysis.claim_design`)
    registrations: dict[str, str] = field(default_factory=dict)  # claim id -> digest served (`analysis.registrations`)
    registered_in: Path | None = None  # the folder of the spec's registrations, which the analysis reads
    through_look: int | None = None  # under a sequential design, stop after this look; --resume continues the next


class ExperimentRunner:
    """Runs one plan; holds the run ledger (MLflow), the progress board, Ray's side of the run (its
    `TuneDriver`) and the tune and replicate phases."""

    def __init__(self, plan: Plan, options: RunOptions, console: Console):
        self.plan = plan
        self.options = options
        self.console = console
        self.tracking_uri = resolve_tracking_uri(plan.tracking_uri, options.workdir)
        self.optuna_storage = resolve_optuna_storage(plan.optuna_storage, self.tracking_uri, options.workdir)
        self.study_storage: Any = None  # the Optuna storage, opened before Ray starts when an arm is tuned
        self.storage = options.storage or str((options.workdir / ".nerplat" / "ray").resolve())
        self.select_metric = plan.select_metric
        self.undecidable = options.undecidable
        self.tracker: ExperimentTracker | None = None
        self.ledger: RunLedger | None = None
        self.board = ProgressBoard(plan.experiment, console, every=options.progress_every)
        self.board.describe(plan.arms)
        self.metrics = TrialMetrics(plan.experiment)
        self.ray = TuneDriver(
            plan, self.board, self.metrics, console, storage=self.storage, address=options.address,
            verbose=options.verbose, metrics_port=options.metrics_port,
        )  # fmt: skip
        self.spec_change: SpecChange | None = None  # set when a resume's spec differs from the experiment's
        self.tune_phase: TunePhase | None = None  # both set once the ledger is open (`_open_phases`)
        self.replicate_phase: ReplicatePhase | None = None

    # -- entry --------------------------------------------------------------------------------

    def run(self) -> RunSummary:
        """Every refusal that needs no Ray comes first (what would stop Ray, before any file is
        written; then store, spec, report folder), then Ray starts, then the cluster is checked, and
        only then the summary run is opened and leased. A resume with nothing left to run (every
        arm's phases completed earlier) starts no Ray at all (`_work_left`)."""
        quiet_library_logs(self.options.verbose)
        treat_sigterm_as_ctrl_c()
        self._refuse_unwritable_ray_storage()
        if self.ray.address:
            self.board.stage(f"checking the Ray cluster at {self.ray.address}")
        refuse_unusable_ray(self.ray.address, self.ray.address_flag, self.options.metrics_port)
        self.board.stage(f"opening the MLflow store {self.tracking_uri}")
        self._refuse_unwritable_store()
        if self.options.resume and not experiment_exists(self.tracking_uri, self.plan.experiment):
            # `make run` resumes on a fresh clone too: say so and start, rather than refuse.
            self.console.print(escape(
                f"--resume: the store {self.tracking_uri} has no experiment '{self.plan.experiment}' yet; starting it"
            ))
        self.tracker = ExperimentTracker.open(self.tracking_uri, self.plan.experiment, spec_sha256=self.plan.spec_sha256)
        self.tracker.notify = lambda message: self.console.print(f"[yellow]{escape(message)}[/]")
        self.ledger = RunLedger(self.tracker)
        self._refuse_silent_rerun(self.tracker)
        self._check_spec_change(self.tracker)
        self._refuse_held_lease()
        self._refuse_unreachable_store()
        if any(arm.tune_trials for arm in self.plan.arms):
            self.board.stage(f"opening the Optuna storage {self.optuna_storage} (optuna-dashboard shows the search)")
            self.study_storage = open_optuna_storage(self.optuna_storage)
        self._open_phases()
        if self.options.resume:  # a completed tune phase's choice is read back, never made again: readable?
            rerun = self.spec_change.rerun if self.spec_change is not None else ()
            self.tune_phase.refuse_unusable_choices([arm for arm in self.plan.arms if arm.id not in rerun])
        if self.options.analyze and self.options.replicate:
            owned_files(self.report_dir)  # a folder no report wrote is refused now, not after training
        configure_ray_environment(self.storage)
        if self._work_left():
            self.ray.connect()
        summary_run = self.ledger.start_summary(self.plan, plugin_files=files_record(), change=self.spec_change)
        if self.spec_change is not None:
            self._rerun_changed_arms(self.spec_change)
        try:
            with self.board:
                summary = self._run_arms()
                self._analyze_into(summary)
                self._hold_final_metrics()
        except (Interrupted, KeyboardInterrupt):
            self.ledger.interrupt_phases()
            self.ledger.finish_summary(summary_run.run_id, "interrupted")
            raise Interrupted() from None
        except StoreLost:
            self.ledger.release()  # nothing more can be written; --resume marks what was running interrupted
            raise
        except Exception:  # a bug: its traceback is shown, but the runs do not stay RUNNING
            self.ledger.interrupt_phases()
            self.ledger.finish_summary(summary_run.run_id, "failed")
            raise
        finally:
            self.metrics.stop()
        summary.status = _summary_status(summary, self.options.replicate)
        self.ledger.finish_summary(summary_run.run_id, summary.status)
        return summary

    def _open_phases(self) -> None:
        """The tune and replicate phases, sharing what this run has opened (its ledger, the study storage)."""
        context = PhaseContext(
            plan=self.plan, ledger=self.ledger, board=self.board, metrics=self.metrics, console=self.console,
            tracking_uri=self.tracking_uri, select_metric=self.select_metric, ray=self.ray,
            study_storage=self.study_storage, optuna_storage=self.optuna_storage, undecidable=self.undecidable,
            registrations=self.options.registrations, through_look=self.options.through_look,
        )
        self.tune_phase, self.replicate_phase = TunePhase(context), ReplicatePhase(context)

    def _hold_final_metrics(self) -> None:
        """A scraped run's last values (final counts, the last trials' series) would leave with Ray
        when the driver exits: they stay exported `LINGER_SECONDS` after the last change first."""
        scraped = self.options.metrics_port is not None or self.ray.address
        seconds = self.metrics.hold_seconds()
        if scraped and seconds > 0:
            self.board.stage(f"keeping the final metrics exported {seconds:.0f} s more, for Prometheus to scrape")
            self.metrics.hold()

    def _work_left(self) -> bool:
        """Whether this session may have trials to run: false only for a resume whose every phase
        (tune, and replicate unless --tune-only) of every arm ended `completed` in an earlier session
        and whose spec change, if any, reruns no arm. Ray is then never started; were a phase to find
        work all the same (a sequential design given other claims to replicate), it connects first."""
        if not self.options.resume or (self.spec_change is not None and self.spec_change.rerun):
            return True
        phases = ("tune", "replicate") if self.options.replicate else ("tune",)
        return not all(
            self.ledger.phase_completed(arm, phase)
            for arm in self.plan.arms for phase in phases if phase == "replicate" or arm.tune_trials
        )

    def _run_arms(self) -> RunSummary:
        """Tunes every arm, then replicates the arms whose tuning is complete."""
        outcomes = {arm.id: ArmOutcome(arm.id) for arm in self.plan.arms}
        for arm in self.plan.arms:
            if arm.tune_trials:
                tune = self.board.phase(arm.id, "tune", arm.tune_trials, self.plan.tune.mode)
                if self.options.resume:  # its ETA leaves out what an earlier session finished
                    tune.skipped = self.ledger.finished_earlier(arm, "tune")
            if self.options.replicate:  # a --tune-only run's ETA and counts hold its tuning only
                replicate = self.board.phase(arm.id, "replicate", len(arm.replicates))
                if self.options.resume:
                    replicate.skipped = self.ledger.finished_earlier(arm, "replicate")
        for arm in self.plan.arms:
            if arm.tune_trials:
                self.tune_phase.tune_arm(arm, outcomes[arm.id])
            else:
                outcomes[arm.id].chosen = {}
        if self.options.replicate:
            self.replicate_phase.replicate([arm for arm in self.plan.arms if outcomes[arm.id].chosen is not None], outcomes)
        return RunSummary(
            self.plan.experiment, self.tracking_uri, self.tracker.experiment_id, list(outcomes.values()),
            optuna_storage=self.optuna_storage if self.study_storage is not None else None,
            next_look=self.replicate_phase.next_look,
        )

    @property
    def report_dir(self) -> Path:
        return self.options.report_dir or (self.options.workdir / "reports" / path_component(self.plan.experiment))

    def _analyze_into(self, summary: RunSummary) -> None:
        """The report, unless an arm failed (a resume that completes it writes the report), or the
        one already there when its inputs are unchanged; a store or disk that fails here is reported
        in `summary.analysis_error`, not as a traceback."""
        if not (self.options.analyze and self.options.replicate) or summary.failed():
            return
        self.board.stage(f"analysis: statistics, tables and plots into {self.report_dir}")
        kill_point("analysis")
        try:
            report = self._analyze()
        except StorageError as error:
            summary.analysis_error = str(error)
            return
        except (OSError, *store_errors()) as error:
            summary.analysis_error = f"the analysis could not be written ({type(error).__name__}: {error})"
            return
        if report.kept:  # a resume with nothing left to run: the same runs, the same report
            self.board.stage(f"analysis unchanged, report at {report.out_dir}")
        summary.report_dir, summary.unconverged = report.out_dir, report.unconverged

    def _refuse_unreachable_store(self) -> None:
        address = self.ray.address
        if address and sqlite_path(self.tracking_uri) is not None and not is_local(address):
            raise UserInputError(
                f"the MLflow store {self.tracking_uri} is a file on this machine, but Ray at {address} runs trials on "
                "other machines that cannot write to it: set MLFLOW_TRACKING_URI (or tracking.uri in the spec) to an "
                "MLflow server they can reach"
            )

    def _refuse_unwritable_store(self) -> None:
        """A SQLite store (or its artifact folder) this driver cannot write is said before Ray starts; its
        first write would be the lease's claim, after (which tells a refused write from a lost race too)."""
        path = sqlite_path(self.tracking_uri)
        if path is None or not path.is_file():
            return
        folders = [path.parent] + [
            root for root in [local_artifact_root(self.tracking_uri)] if root is not None and root.is_dir()
        ]
        unwritable = [str(p) for p in (path, *folders) if not os.access(p, os.W_OK)]
        if unwritable:
            raise StorageError(
                f"the MLflow store at {self.tracking_uri} is read-only or not writable by this user ({', '.join(unwritable)}); "
                "nothing was changed: make it writable, or point tracking.uri (or MLFLOW_TRACKING_URI) at a store this "
                "driver can write to"
            )

    def _refuse_unwritable_ray_storage(self) -> None:
        """Ray Tune's storage folder (its trials' state and checkpoints) is first written inside Tune,
        after the store opened and Ray started: one this driver cannot write is refused before either."""
        if "://" not in self.storage:  # a cloud URI is Tune's to open
            check_writable_folder(Path(self.storage), "--storage" if self.options.storage else "--workdir")

    def _refuse_silent_rerun(self, tracker: ExperimentTracker) -> None:
        if self.options.resume:
            return
        if tracker.edits.has_runs():
            raise UserInputError(
                f"MLflow experiment '{self.plan.experiment}' in {self.tracking_uri} already has runs: pass --resume to "
                "continue it (finished trials are kept), or change `experiment:` in the spec to start a new one"
            )

    def _refuse_held_lease(self) -> None:
        """A second driver is refused before it starts Ray; the claim itself comes with the summary run."""
        summary = self.tracker.find_summary_run()
        if summary is not None:
            bookkeeping = self.tracker.bookkeeping_run_id(summary.info.run_id)
            ExperimentLease(self.tracking_uri, self.tracker.client, bookkeeping, self.plan.experiment).refuse_if_held()

    def _check_spec_change(self, tracker: ExperimentTracker) -> None:
        """A resume with another spec or profile, or whose arms' finished runs read other corpus or plugin
        files than those there now (`run/inputs.py`), is refused before Ray starts, unless it leaves
        every arm's runs as they were, or --rerun-changed asks to run the arms it changes anew."""
        tracker.inputs = arm_inputs(self.plan, files_record())  # what this session's runs record reading
        summary = tracker.find_summary_run() if self.options.resume else None
        if summary is None:
            return
        started_with = summary.data.tags.get(schema.SPEC_SHA) or self.plan.spec_sha256
        spec_changed = started_with != self.plan.spec_sha256
        # Runs restored after --rerun-changed deleted them are not the experiment's: never judged (track/current_runs.py).
        runs = current_runs(
            run for kind in ("arm", "trial", "replicate") for run in search_all(tracker.client, tracker.experiment_id, kind)
        )
        if runs.ignored:
            self.console.print(f"[yellow]warning:[/] {escape(runs.warning())}")
        inputs = input_changes(runs.kept, tracker.inputs)
        if not spec_changed and not inputs:
            return
        shas = f"sha256 {started_with[:12]}, now {self.plan.spec_sha256[:12]}"
        earlier = read_plan(tracker.client, summary)
        if spec_changed and (not earlier or "arms" not in earlier):
            raise UserInputError(
                f"--resume: experiment '{self.plan.experiment}' was started from another resolved spec ({shas}) and "
                "it has no plan.json with its arms, so what changed cannot be told; nothing was changed: resume with the spec "
                "and profile it was started with, or change `experiment:` to start anew"
            )
        change = (
            spec_change(started_with, earlier, self.plan) if spec_changed else SpecChange(started_with, earlier or {}, (), ())
        )
        change = replace(change, inputs=inputs)
        if change.rerun and not self.options.rerun_changed:
            what, causes = [], []
            if spec_changed:
                what.append(f"was started from another resolved spec ({shas})")
                causes.append("the spec or --profile")
            if inputs:
                what.append("has finished runs that read other corpus or plugin files than those there now")
                causes.append("the files")
            raise UserInputError(
                f"--resume: experiment '{self.plan.experiment}' {' and '.join(what)}: {' and '.join(causes)} changed the "
                f"runs of arms ({change.describe()}); nothing was changed: add --rerun-changed to run those arms anew "
                "(their runs are deleted; the other arms keep their finished runs), resume with the spec, profile and "
                "files it was started with, or change `experiment:` to start anew"
            )
        self.spec_change = change

    def _rerun_changed_arms(self, change: SpecChange) -> None:
        """Under the lease, once the summary run has the resumed spec: the runs of the arms it changes are deleted."""
        runs, versions = self.ledger.retire_arms(change.rerun)
        shas = f"sha256 {change.started_with[:12]} -> {self.plan.spec_sha256[:12]}"
        what = (
            f"the spec changed ({shas})" if change.started_with != self.plan.spec_sha256 else "the files some arms read changed"
        )
        if not change.rerun:
            self.board.stage(f"{what} but no arm's runs: every finished run is kept")
            return
        models = f" and {versions} registered model version(s)" if versions else ""
        self.board.stage(
            f"{what}: running anew the arms it changes ({change.describe()}); their {runs} earlier "
            f"runs{models} were deleted in MLflow (`mlflow runs restore --run-id ID` restores a run, docs/tracking.md); "
            "the other arms keep their finished runs"
        )

    def _analyze(self) -> Any:
        from nerplat.analysis.report import analyze_experiment  # lazy: polars, which only the analysis needs

        return analyze_experiment(
            self.plan.experiment, self.tracking_uri, self.report_dir, ("md", "latex", "html", "csv"), keep_unchanged=True,
            registrations=self.options.registered_in,
        )


def _summary_status(summary: RunSummary, replicated: bool) -> str:
    """Never `completed` for a run with a failure; a --tune-only run stays `interrupted` until resumed."""
    if summary.failed() or summary.analysis_error:
        return "failed"
    return "completed" if replicated else "interrupted"

