"""`nerplat run`: a compiled plan becomes Ray Tune experiments, tracked in MLflow, then analysed.

Protocol (the papers'): per arm, tune on dev with the spec's searcher and scheduler, choose the
configuration with the best `dev_best_<metric>`, then re-train it for every replicate (seed x
partition) and score it on the replicate split. Arms without a search space go straight to their
replicates. All replicates of all arms run in one Tuner, so small arms fill idle CPUs.

Resume reads MLflow, not Ray's experiment state: finished trials and replicates are found by their
deterministic keys (run tags) and skipped; a tuning search continues the arm's Optuna study (the live view
optuna-dashboard shows, track/studies.py), brought in step with MLflow's finished trials first
(run/study.py); trials that were running when the driver stopped are marked interrupted and
replaced by new ones. This works the same after Ctrl-C, a killed driver, or on another cluster.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from nerplat.errors import Problem, StorageError, UserInputError
from nerplat.kill_points import kill_point
from nerplat.plan.compiler import TUNE_SEED
from nerplat.plugins import files_record
from nerplat.plan.model import Arm, Plan, Replicate
from nerplat.run.allocator import worker_malloc_line, worker_preload
from nerplat.run.exported_metrics import TrialMetrics
from nerplat.run.job import PHASE_KEY, TrialJob
from nerplat.run.ledger import FinishedTrial, RunLedger
from nerplat.run.looks import ReplicateLooks, claimed_arms, needed_arms
from nerplat.run.progress import DEFAULT_EVERY, ProgressBoard
from nerplat.run.ray_preflight import joining_problem, refuse_busy_port, refuse_small_file_size_limit, refuse_unreachable_cluster
from nerplat.run.spec_change import SpecChange, spec_change
from nerplat.track import schema
from nerplat.track.current_runs import current_runs
from nerplat.track.runs import ExperimentTracker, experiment_exists
from nerplat.track.store import StoreLost, local_artifact_root, resolve_tracking_uri, sqlite_path
from nerplat.track.studies import open_optuna_storage, resolve_optuna_storage, study_name

# Ray's own console output would fight the progress view; its result loggers (CSV, JSON,
# TensorBoard per trial) cost disk across thousands of trials and MLflow has it all. Set by
# `ExperimentRunner.run` (not on import), unless the user set them.
RAY_SETTINGS = {
    "RAY_AIR_NEW_OUTPUT": "0",
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",
    "RAY_CHDIR_TO_TRIAL_DIR": "0",
    "TUNE_DISABLE_SIGINT_HANDLER": "0",
    # The driver's own MLflow calls: one quick retry, then `PatientClient` (track/store.py) takes over
    # with a visible message per attempt instead of MLflow's silent four-minute backoff.
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
}

# Passed to every Ray worker, so trials find corpora, caches and the store as the driver does.
# Not MLFLOW_TRACKING_URI: trials get the URI without credentials from the runner
# (nerplat.track.store), and Ray's runtime environment is readable by anyone on the cluster.
FORWARDED_ENV = (
    "NERPLAT_DATA",
    "NERPLAT_CACHE",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_HOME",
    "TOKENIZERS_PARALLELISM",
    "MLFLOW_S3_ENDPOINT_URL",
    "RAY_CHDIR_TO_TRIAL_DIR",
    "NERPLAT_RAY_STORAGE",
)




class Interrupted(Exception):
    """The user stopped the run (Ctrl-C or SIGTERM); state is in MLflow and `--resume` continues."""


def treat_sigterm_as_ctrl_c() -> None:
    """SIGTERM (what Kubernetes sends) stops the run as Ctrl-C does: Tune ends its trials, their runs
    are marked interrupted. Replaces Ray's handler (`sys.exit` mid-step: a C++ stack dump, exit 134);
    so it is installed again after `ray.init`."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: signal.raise_signal(signal.SIGINT))


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


@dataclass
class ArmOutcome:
    arm: str
    chosen: dict[str, Any] | None = None  # searched values chosen on dev ({} without a search space)
    chosen_value: float | None = None
    tune_trials: dict[str, int] = field(default_factory=dict)  # status -> count
    replicates: dict[str, int] = field(default_factory=dict)  # status -> count
    errors: list[str] = field(default_factory=list)  # full message of every failure, and why the arm is incomplete


@dataclass
class RunSummary:
    experiment: str
    tracking_uri: str
    experiment_id: str
    outcomes: list[ArmOutcome]
    report_dir: Path | None = None
    analysis_error: str | None = None
    unconverged: tuple[str, ...] = ()  # one line per compared cell whose epoch budget did not converge
    status: str = "completed"  # of the summary run: completed | failed | interrupted (--tune-only)
    optuna_storage: str | None = None  # where the tuned arms' Optuna studies are (None: no arm was tuned)

    def failed(self) -> list[ArmOutcome]:
        return [o for o in self.outcomes if o.errors or o.replicates.get("failed")]


def quiet_library_logs(verbose: bool) -> None:
    """Ray, Tune, Optuna and MLflow log routine steps at INFO/WARNING; the progress view says it better."""
    from nerplat.track.store import tracking_logger

    level = logging.INFO if verbose else logging.ERROR
    tracking_logger().setLevel(level)  # MLflow configures its loggers on import: set levels after it
    for name in ("ray", "ray.tune", "ray.train", "optuna", "alembic"):
        logging.getLogger(name).setLevel(level)
    # Tune logs a failed trial with Ray's whole traceback; the run prints the trial's own message instead
    # (run/events.py, in full, with its arm), and --verbose still shows the traceback.
    logging.getLogger("ray.tune.execution.tune_controller").setLevel(level if verbose else logging.CRITICAL)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.INFO if verbose else optuna.logging.WARNING)


def connect_ray(address: str | None, verbose: bool, metrics_port: int | None = None, flag: str = "--address") -> str | None:
    """Embedded local Ray, reachable from this machine only, unless `address` names a running cluster
    (the runner's `ray_address`: --address, else RAY_ADDRESS; `flag` says which, for messages).
    Returns the Ray dashboard's URL (None when the cluster runs none).

    The embedded Ray is always a new cluster (`address="local"`): without it `ray.init` joins the
    cluster /tmp/ray/ray_current_cluster names (another user's `ray start`, or a stale file that
    makes it retry "Failed to connect to GCS" for ever). Joining one takes --address or RAY_ADDRESS.
    What Ray would report only as a timeout is refused first (`run.ray_preflight`).

    `metrics_port` is where the embedded Ray's metrics agent serves Prometheus (Ray's metrics and
    nerplat's, `run.exported_metrics`); a running cluster's nodes set theirs with `ray start
    --metrics-export-port`, so it is refused with an address."""
    import ray

    if ray.is_initialized():
        return None  # this process connected earlier (a test, a notebook) and printed the URL then
    from nerplat.plugins import ray_runtime_env

    env_vars = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
    plugins = ray_runtime_env()  # the user's plugin code, shipped to and imported on every worker
    kwargs: dict[str, Any] = {
        "runtime_env": {**plugins, "env_vars": {**env_vars, **plugins.get("env_vars", {})}},
        "log_to_driver": verbose,
        "logging_level": logging.INFO if verbose else logging.ERROR,
    }
    if address:
        if metrics_port is not None:
            raise UserInputError(
                Problem(
                    f"--metrics-port sets the port of an embedded Ray; the nodes of the cluster at {address} "
                    "serve their metrics on the port of their `ray start --metrics-export-port`",
                    path="--metrics-port",
                )
            )
        refuse_unreachable_cluster(address, flag)
        try:
            return dashboard_url(ray.init(address=address, **kwargs))
        except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as error:  # RayError: AuthenticationError
            raise joining_problem(address, flag, error) from None
    if metrics_port is not None:
        refuse_busy_port(metrics_port)
        kwargs["_metrics_export_port"] = metrics_port
    refuse_small_file_size_limit()
    kwargs["runtime_env"]["env_vars"].update(worker_preload(os.environ))  # a cluster's nodes choose their own
    # Every process of an embedded cluster (GCS, raylet, workers, agents) listens on loopback only:
    # Ray binds its servers to the node IP when that is loopback, and takes loopback as the node IP
    # while its multi-node switch is off (read by services.get_node_ip_address; the switch macOS and
    # Windows use, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, set here after import). `ray.init(
    # _node_ip_address="127.0.0.1")` cannot do it: Ray swaps loopback for the external address.
    from ray._private import ray_constants

    multi_node = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        # The dashboard (state API) is what Train V2 uses to clean up stopped trials: without it a trial
        # that ASHA stops is never cleaned up and later trials wait for their worker group forever.
        return dashboard_url(ray.init(address="local", include_dashboard=True, dashboard_host="127.0.0.1", **kwargs))
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = multi_node  # a later ray.init(address=...) finds its node as usual


def dashboard_url(context: Any) -> str | None:
    """The dashboard address of `ray.init`'s context as a URL ('127.0.0.1:8265' -> 'http://127.0.0.1:8265')."""
    address = getattr(context, "dashboard_url", None)
    if not address:
        return None
    return address if "://" in address else f"http://{address}"


def configure_ray_environment(storage: str) -> None:
    """Ray settings of this driver process (the user's own values win) and where Train workers store."""
    for name, value in RAY_SETTINGS.items():
        os.environ.setdefault(name, value)
    os.environ["NERPLAT_RAY_STORAGE"] = storage  # forwarded: Ray Train workers of multi-worker trials


def concurrency(arm: Arm, limit: int | None) -> int:
    """Trials of `arm` that fit the running Ray cluster at once, capped by the spec's max_concurrent."""
    import ray

    return trials_that_fit(arm, ray.cluster_resources(), limit)


def trials_that_fit(arm: Arm, available: dict[str, float], limit: int | None) -> int:
    """Trials of `arm` that fit in `available` resources at once (at least one), capped by `limit`."""
    resources = arm.resources
    per_trial = {"CPU": resources.cpus_per_worker * resources.workers, "GPU": resources.gpus_per_worker * resources.workers}
    per_trial |= {name: amount * resources.workers for name, amount in resources.custom.items()}
    fits = [math.floor(available.get(name, 0.0) / need + 1e-9) for name, need in per_trial.items() if need > 0]
    count = max(1, min(fits)) if fits else 1
    return min(count, limit) if limit else count


def placement_problem(arm: Arm, nodes: list[dict[str, float]]) -> str | None:
    """Why no trial of `arm` can ever be placed on Ray nodes with these total resources, or None.

    Each worker's bundle must fit on one node, and all bundles (plus the launcher's 0.01 CPU of a
    multi-worker trial) in the cluster.
    """
    resources = arm.resources
    bundle = {"CPU": resources.cpus_per_worker, "GPU": resources.gpus_per_worker, **resources.custom}
    bundle = {name: amount for name, amount in bundle.items() if amount > 0}
    if not any(all(node.get(name, 0.0) >= amount - 1e-9 for name, amount in bundle.items()) for node in nodes):
        largest = ", ".join(f"{name} {max((node.get(name, 0.0) for node in nodes), default=0.0):g}" for name in bundle)
        return f"arm {arm.id}: a worker needs {_amounts(bundle)}, but no Ray node has that much (largest: {largest})"
    need = {name: amount * resources.workers for name, amount in bundle.items()}
    if resources.workers > 1:
        need["CPU"] = need.get("CPU", 0.0) + 0.01
    total = {name: sum(node.get(name, 0.0) for node in nodes) for name in need}
    if any(total[name] < amount - 1e-9 for name, amount in need.items()):
        return f"arm {arm.id}: a trial of {resources.workers} workers needs {_amounts(need)}, but the cluster has {_amounts(total)}"
    return None


def _amounts(resources: dict[str, float]) -> str:
    return ", ".join(f"{name} {amount:g}" for name, amount in resources.items())


def _select_key(plan: Plan) -> str:
    metric = plan.tune.metric if plan.tune else "dev_micro_f1"
    return metric[len("dev_"):] if metric.startswith("dev_") else metric


class ExperimentRunner:
    """Runs one plan; holds the run ledger (MLflow), the progress board and the Ray storage location."""

    def __init__(self, plan: Plan, options: RunOptions, console: Console):
        self.plan = plan
        self.options = options
        self.console = console
        self.tracking_uri = resolve_tracking_uri(plan.tracking_uri, options.workdir)
        self.optuna_storage = resolve_optuna_storage(plan.optuna_storage, self.tracking_uri, options.workdir)
        self.study_storage: Any = None  # the Optuna storage, opened before Ray starts when an arm is tuned
        self.storage = options.storage or str((options.workdir / ".nerplat" / "ray").resolve())
        self.select_metric = _select_key(plan)
        self.tracker: ExperimentTracker | None = None
        self.ledger: RunLedger | None = None
        self.board = ProgressBoard(plan.experiment, console, every=options.progress_every)
        self.board.describe(plan.arms)
        self.metrics = TrialMetrics(plan.experiment)
        self.spec_change: SpecChange | None = None  # set when a resume's spec differs from the experiment's

    # -- entry --------------------------------------------------------------------------------

    def run(self) -> RunSummary:
        """Every refusal that needs no Ray comes first (store, spec, report folder), then Ray starts,
        then the cluster is checked, and only then the summary run is opened and leased."""
        quiet_library_logs(self.options.verbose)
        treat_sigterm_as_ctrl_c()
        self.board.stage(f"opening the MLflow store {self.tracking_uri}")
        self._refuse_unwritable_store()
        if self.options.resume and not experiment_exists(self.tracking_uri, self.plan.experiment):
            # `make run` resumes on a fresh clone too: say so and start, rather than refuse.
            self.console.print(escape(f"--resume: the store {self.tracking_uri} has no experiment '{self.plan.experiment}' yet; starting it"))
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
        if self.options.analyze and self.options.replicate:
            from nerplat.analysis.report_folder import owned_files

            owned_files(self.report_dir)  # a folder no report wrote is refused now, not after training
        configure_ray_environment(self.storage)
        self._start_ray()
        treat_sigterm_as_ctrl_c()
        self._refuse_unplaceable()
        summary_run = self.ledger.start_summary(self.plan, plugin_files=files_record(), change=self.spec_change)
        if self.spec_change is not None:
            self._rerun_changed_arms(self.spec_change)
        self.metrics.start()
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

    @property
    def ray_address(self) -> str | None:
        """The running cluster the run joins (--address, else RAY_ADDRESS); None for an embedded Ray."""
        return self.options.address or os.environ.get("RAY_ADDRESS")

    def _hold_final_metrics(self) -> None:
        """A scraped run's last values (final counts, the last trials' series) would leave with Ray
        when the driver exits: they stay exported `LINGER_SECONDS` after the last change first."""
        scraped = self.options.metrics_port is not None or self.ray_address
        seconds = self.metrics.hold_seconds()
        if scraped and seconds > 0:
            self.board.stage(f"keeping the final metrics exported {seconds:.0f} s more, for Prometheus to scrape")
            self.metrics.hold()

    def _start_ray(self) -> None:
        """Connects to Ray (its start takes tens of seconds: said before, and its dashboard after)."""
        address = self.ray_address
        self.board.stage(f"connecting to Ray at {address}" if address else "starting Ray (embedded, on 127.0.0.1)")
        flag = "--address" if self.options.address else "RAY_ADDRESS"
        url = connect_ray(address, self.options.verbose, self.options.metrics_port, flag)
        started = f"connected to Ray at {address}" if address else "Ray started"
        line = f"{started}, dashboard at {url}" if url else f"{started} (no dashboard URL)"
        if self.options.metrics_port is not None:
            line += f"; Prometheus metrics at http://127.0.0.1:{self.options.metrics_port}/metrics"
        if not address:
            line += f"; {worker_malloc_line(os.environ)}"
        self.board.stage(line)
        limit = self.plan.tune.max_concurrent if self.plan.tune else None
        self.board.concurrency = concurrency(self.plan.arms[0], limit)

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
                self._tune_arm(arm, outcomes[arm.id])
            else:
                outcomes[arm.id].chosen = {}
        if self.options.replicate:
            self._replicate([arm for arm in self.plan.arms if outcomes[arm.id].chosen is not None], outcomes)
        return RunSummary(
            self.plan.experiment, self.tracking_uri, self.tracker.experiment_id, list(outcomes.values()),
            optuna_storage=self.optuna_storage if self.study_storage is not None else None,
        )

    @property
    def report_dir(self) -> Path:
        return self.options.report_dir or (self.options.workdir / "reports" / _safe(self.plan.experiment))

    def _analyze_into(self, summary: RunSummary) -> None:
        """The report, unless an arm failed (a resume that completes it writes the report); a store
        or disk that fails here is reported in `summary.analysis_error`, not as a traceback."""
        from nerplat.track.store import store_errors

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
        summary.report_dir, summary.unconverged = report.out_dir, report.unconverged

    def _refuse_unreachable_store(self) -> None:
        address = self.ray_address
        if address and sqlite_path(self.tracking_uri) is not None and not _is_local(address):
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
        folders = [path.parent] + [root for root in [local_artifact_root(self.tracking_uri)] if root is not None and root.is_dir()]
        unwritable = [str(p) for p in (path, *folders) if not os.access(p, os.W_OK)]
        if unwritable:
            raise StorageError(
                f"the MLflow store at {self.tracking_uri} is read-only or not writable by this user ({', '.join(unwritable)}); "
                "nothing was changed: make it writable, or point tracking.uri (or MLFLOW_TRACKING_URI) at a store this "
                "driver can write to"
            )

    def _refuse_silent_rerun(self, tracker: ExperimentTracker) -> None:
        if self.options.resume:
            return
        existing = tracker.client.search_runs([tracker.experiment_id], max_results=1)
        if existing:
            raise UserInputError(
                f"MLflow experiment '{self.plan.experiment}' in {self.tracking_uri} already has runs: pass --resume to "
                "continue it (finished trials are kept), or change `experiment:` in the spec to start a new one"
            )

    def _refuse_held_lease(self) -> None:
        """A second driver is refused before it starts Ray; the claim itself comes with the summary run."""
        from nerplat.track.lease import ExperimentLease

        summary = self.tracker.find_summary_run()
        if summary is not None:
            bookkeeping = self.tracker.bookkeeping_run_id(summary.info.run_id)
            ExperimentLease(self.tracking_uri, self.tracker.client, bookkeeping, self.plan.experiment).refuse_if_held()

    def _check_spec_change(self, tracker: ExperimentTracker) -> None:
        """A resume with another spec or profile, or whose arms' finished runs read other corpus or plugin
        files than those there now (`run/inputs.py`), is refused before Ray starts, unless it leaves
        every arm's runs as they were, or --rerun-changed asks to run the arms it changes anew."""
        from nerplat.track.experiment_reader import read_plan, search_all
        from nerplat.run.inputs import arm_inputs, input_changes

        tracker.inputs = arm_inputs(self.plan, files_record())  # what this session's runs record reading
        summary = tracker.find_summary_run() if self.options.resume else None
        if summary is None:
            return
        started_with = summary.data.tags.get(schema.SPEC_SHA) or self.plan.spec_sha256
        spec_changed = started_with != self.plan.spec_sha256
        # Runs restored after --rerun-changed deleted them are not the experiment's: never judged (track/current_runs.py).
        runs = current_runs(run for kind in ("arm", "trial", "replicate") for run in search_all(tracker.client, tracker.experiment_id, kind))
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
                "it has no plan.json with its arms, so what changed cannot be told; nothing was changed: resume with the spec and "
                "profile it was started with, or change `experiment:` to start anew"
            )
        change = spec_change(started_with, earlier, self.plan) if spec_changed else SpecChange(started_with, earlier or {}, (), ())
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
                f"runs of arms ({change.describe()}); nothing was changed: add --rerun-changed to run those arms anew (their runs "
                "are deleted; the other arms keep their finished runs), resume with the spec, profile and files it was "
                "started with, or change `experiment:` to start anew"
            )
        self.spec_change = change

    def _rerun_changed_arms(self, change: SpecChange) -> None:
        """Under the lease, once the summary run has the resumed spec: the runs of the arms it changes are deleted."""
        runs, versions = self.ledger.retire_arms(change.rerun)
        shas = f"sha256 {change.started_with[:12]} -> {self.plan.spec_sha256[:12]}"
        what = f"the spec changed ({shas})" if change.started_with != self.plan.spec_sha256 else "the files some arms read changed"
        if not change.rerun:
            self.board.stage(f"{what} but no arm's runs: every finished run is kept")
            return
        models = f" and {versions} registered model version(s)" if versions else ""
        self.board.stage(
            f"{what}: running anew the arms it changes ({change.describe()}); their {runs} earlier "
            f"runs{models} were deleted in MLflow (`mlflow runs restore --run-id ID` restores a run, docs/tracking.md); "
            "the other arms keep their finished runs"
        )

    def _refuse_unplaceable(self) -> None:
        """Arms whose trials no node can place: refused on an embedded cluster; on a given cluster an
        autoscaler may add nodes, so the wait is announced instead of silent."""
        import ray

        nodes = [node["Resources"] for node in ray.nodes() if node.get("Alive")]
        problems = [problem for arm in self.plan.arms if (problem := placement_problem(arm, nodes))]
        if not problems:
            return
        if not self.ray_address:
            raise UserInputError(
                [Problem(f"{problem}: lower resources.cpus_per_worker / workers, or pass --address of a larger Ray cluster", path="resources") for problem in problems]
            )
        for problem in problems:
            self.console.print(f"[yellow]waiting:[/] {escape(problem)}; Tune waits until a node that fits joins (an autoscaler may add one; Ctrl-C stops)")

    # -- tune phase --------------------------------------------------------------------------

    def _tune_arm(self, arm: Arm, outcome: ArmOutcome) -> None:
        """Searches the arm's space on dev (continuing an earlier session's trials), then chooses."""
        ledger = self.ledger
        parent = ledger.start_phase(arm, "tune", params={"search_space": {k: v.label() for k, v in arm.search_space.items()}})
        metric = f"dev_best_{self.select_metric}"
        previous = ledger.finished_trials(parent.run_id, metric)
        progress = self.board.phase(arm.id, "tune", arm.tune_trials)
        progress.skipped = len(previous)
        for trial in previous:
            progress.offer(trial.value)
        remaining = arm.tune_trials - len(previous)
        budget_spent = False
        if not parent.finished and remaining > 0:
            kept = f" ({len(previous)} finished earlier)" if previous else ""
            self.board.stage(f"tuning {arm.id}: {remaining} of {arm.tune_trials} trials to run{kept}")
            errors, budget_spent = self._search(arm, parent.run_id, previous, remaining)
            outcome.errors += errors
            previous = ledger.finished_trials(parent.run_id, metric)
        outcome.tune_trials.update(ledger.statuses(parent.run_id))
        if len(previous) < arm.tune_trials:
            budget = f"tune.time_budget_s ({self.plan.tune.time_budget_s:g} s)" if budget_spent else None
            if budget and previous:  # the spec's own limit: choose from what finished
                self.board.stage(f"tuning {arm.id}: {budget} spent after {len(previous)} of {arm.tune_trials} trials; choosing from those")
            else:
                # Chosen from fewer trials than the spec asks for, the arm would not be the experiment the
                # spec describes: it stays unchosen, and --resume runs the missing trials.
                outcome.errors.append(
                    f"{budget} was spent before any trial finished: raise it" if budget
                    else f"tuning incomplete: {len(previous)} of {arm.tune_trials} trials finished; the arm is not "
                    "replicated until --resume has run the missing ones"
                )
                ledger.finish(parent.run_id, "failed")
                return
        chosen = self._chosen_trial(arm, parent.run_id, previous)
        outcome.chosen, outcome.chosen_value = chosen.values, chosen.value
        ledger.record_choice(parent.run_id, chosen, metric)
        ledger.finish(parent.run_id, "completed")

    def _arm_study(self, arm: Arm, parent_run_id: str, previous: list[FinishedTrial]) -> Any:
        """The arm's Optuna study, in step with MLflow's finished trials (run/study.py)."""
        from nerplat.run.search import optuna_distributions
        from nerplat.run.study import ArmStudy, prepare_study

        study = ArmStudy(self.study_storage, study_name(self.plan.experiment, arm.id), tuple(previous))
        metric = f"dev_best_{self.select_metric}"
        distributions = optuna_distributions(arm.search_space)
        if prepare_study(study, owner=parent_run_id, metric=metric, mode=self.plan.tune.mode, distributions=distributions):
            self.console.print(
                f"[yellow]replaced the Optuna study {escape(study.name)}[/] in {escape(self.optuna_storage)}: it held the "
                "trials of another MLflow run of this arm, since deleted (the experiment or the arm started anew)"
            )
        return study

    def _chosen_trial(self, arm: Arm, parent_run_id: str, previous: list[FinishedTrial]) -> FinishedTrial:
        """The study's best trial, once the study agrees with MLflow: nerplat and optuna-dashboard
        choose the same trial, ties included (run/study.py, `chosen_trial`)."""
        from nerplat.run.study import chosen_trial

        return chosen_trial(self._arm_study(arm, parent_run_id, previous))

    def _search(self, arm: Arm, parent_run_id: str, previous: list[FinishedTrial], remaining: int) -> tuple[list[str], bool]:
        """One Tuner over `remaining` new trials, continuing the arm's Optuna study; returns the arm's
        trial errors and whether `tune.time_budget_s` ended it early."""
        from ray import tune

        from nerplat.run.events import TrialEvents
        from nerplat.run.search import SCHEDULERS, SEARCHERS, searcher_seed, tune_domains
        from nerplat.run.study import asked_trials, enqueue_unfinished, fail_running
        from nerplat.run.trainable import nerplat_trial, trial_resources

        settings = self.plan.tune
        metric = f"dev_best_{self.select_metric}"
        study = self._arm_study(arm, parent_run_id, previous)
        enqueue_unfinished(study, settings.enqueue.get(arm.method, ()))  # the spec's starting points, each once
        seed = searcher_seed(settings.seed, arm.id, asked_trials(study))
        searcher = SEARCHERS.build(
            settings.searcher.name, settings.searcher.params, at="tune.search", space=arm.search_space, seed=seed, study=study
        )
        evaluations = max(1, arm.fixed["train"]["epochs"] // arm.fixed["train"]["eval_every"])
        scheduler = SCHEDULERS.build(settings.scheduler.name, settings.scheduler.params, at="tune.scheduler", max_t=evaluations)
        job = TrialJob(
            arm=arm, phase="tune", seed=TUNE_SEED, partition=arm.partitions[0], eval_split=None,
            select_metric=self.select_metric, parent_run_id=parent_run_id,
        )
        events = TrialEvents(self.ledger, self.board, self.metrics, search=searcher)
        tuner = tune.Tuner(
            tune.with_resources(nerplat_trial, trial_resources),
            param_space={PHASE_KEY: job.model_dump(mode="json"), **tune_domains(arm.search_space)},
            tune_config=tune.TuneConfig(
                metric=metric,
                mode=settings.mode,
                search_alg=searcher,
                scheduler=scheduler,
                num_samples=remaining,
                max_concurrent_trials=concurrency(arm, settings.max_concurrent),
                time_budget_s=settings.time_budget_s,
                reuse_actors=True,
                trial_dirname_creator=lambda trial: trial.trial_id,
            ),
            run_config=self._ray_run_config(f"{_safe(arm.id)}__tune", events, arm.resources.max_retries),
        )
        try:
            budget_spent = self._fit(tuner, events, expected=remaining, time_budget_s=settings.time_budget_s)
        finally:
            fail_running(study)
        return events.errors.get(arm.id, []), budget_spent

    # -- replicate phase ---------------------------------------------------------------------

    def _replicate(self, arms: list[Arm], outcomes: dict[str, ArmOutcome]) -> None:
        """Re-trains each arm's chosen configuration for every replicate not yet completed: all at
        once, or look by look under a sequential design (`run.looks`) while some claim needs the arm."""
        parents: dict[str, str] = {}
        asked = {arm.id: arm.replicates for arm in arms}
        if self.plan.sequential is None:
            self._replicate_look(arms, asked, outcomes, parents)
        else:
            looks = ReplicateLooks(self.plan.sequential, tuple(sorted({r.seed for a in arms for r in a.replicates})))
            claimed = claimed_arms(arms, self.plan.claims)
            active = list(arms)
            for look in range(looks.looks(arms)):
                asked.update({arm.id: looks.replicates(arm, look) for arm in active})
                self.board.stage(f"look {look + 1}: replicates of {len(active)} arm(s) up to {max(len(asked[a.id]) for a in active)} each")
                self._replicate_look(active, asked, outcomes, parents)
                if any(outcomes[a.id].errors for a in active):
                    break  # a failed replicate leaves its claims unjudged: a resume runs it again first
                needed = needed_arms(self._claim_verdicts(), claimed)
                for arm in active:
                    if arm.id not in needed:  # its claims are decided: the progress table counts what it ran
                        self.board.phase(arm.id, "replicate", len(arm.replicates)).total = len(asked[arm.id])
                active = [arm for arm in active if arm.id in needed and len(asked[arm.id]) < len(arm.replicates)]
                if not active:
                    break
        for arm in arms:
            statuses = self.ledger.statuses(parents[arm.id])
            outcomes[arm.id].replicates = statuses
            self.ledger.record_replicate_summary(parents[arm.id], self.plan.replicate_split)
            complete = statuses.get("completed", 0) >= len(asked[arm.id])
            if complete:
                self._register_models(arm, parents[arm.id])
            self.ledger.finish(parents[arm.id], "completed" if complete else "failed")

    def _replicate_look(
        self, arms: list[Arm], asked: dict[str, tuple[Replicate, ...]], outcomes: dict[str, ArmOutcome], parents: dict[str, str]
    ) -> None:
        """Runs the `asked` replicates of `arms` that have not completed, all in one Tuner."""
        jobs = []
        for arm in arms:
            jobs += self._replicate_jobs(arm, asked[arm.id], outcomes[arm.id].chosen or {}, parents)
        if jobs:
            self.board.stage(f"replicates: {len(jobs)} runs of {len(arms)} arm(s) with their chosen configurations")
            for arm_id, errors in self._fit_replicates(arms, jobs).items():
                outcomes[arm_id].errors += errors

    def _claim_verdicts(self) -> Any:
        """The claims judged on the replicates finished so far (statistics only: no ASO, no convergence)."""
        import polars as pl

        from nerplat.analysis.report import settings_from_plan
        from nerplat.analysis.run_frames import fetch_experiment
        from nerplat.track.experiment_reader import open_client
        from nerplat.analysis.verdicts import verdicts

        runs = fetch_experiment(open_client(self.tracking_uri), self.plan.experiment)
        usable = runs.replicates.filter(pl.col("status") == "completed") if not runs.replicates.is_empty() else runs.replicates
        settings = settings_from_plan(self.plan.model_dump(mode="json"), "plan")
        return verdicts(usable, pl.DataFrame(), settings, aso=False)

    def _replicate_jobs(
        self, arm: Arm, replicates: tuple[Replicate, ...], chosen: dict[str, Any], parents: dict[str, str]
    ) -> list[dict[str, Any]]:
        """Opens the arm's replicate runs (finished ones are skipped) and returns the Tune jobs of the rest."""
        parent = self.ledger.start_phase(arm, "replicate", params=chosen, tags={schema.SAMPLED: json.dumps(chosen)})
        parents[arm.id] = parent.run_id
        jobs, skipped = [], 0
        for replicate in replicates:
            config = arm.trial_config(chosen, seed=replicate.seed, partition=replicate.partition, eval_split=self.plan.replicate_split)
            run = self.ledger.open_replicate(parent.run_id, arm, replicate, config)
            if run.finished and run.status == "completed":
                skipped += 1
                continue
            job = TrialJob(
                arm=arm,
                phase="replicate",
                seed=replicate.seed,
                partition=replicate.partition,
                eval_split=self.plan.replicate_split,
                select_metric=self.select_metric,
                fixed_values=chosen,
                parent_run_id=parent.run_id,
                run_id=run.run_id,
                tracking_uri=self.tracking_uri,
                log_model=self.plan.replicate_models != "none",
            )
            jobs.append(job.model_dump(mode="json"))
        self.board.phase(arm.id, "replicate", len(arm.replicates)).skipped = skipped
        return jobs

    def _fit_replicates(self, arms: list[Arm], jobs: list[dict[str, Any]]) -> dict[str, list[str]]:
        """All replicates of all arms in one Tuner, so small arms fill idle CPUs; returns errors by arm."""
        from ray import tune

        from nerplat.run.events import TrialEvents
        from nerplat.run.trainable import nerplat_trial, trial_resources

        events = TrialEvents(self.ledger, self.board, self.metrics)
        limit = self.plan.tune.max_concurrent if self.plan.tune else None
        tuner = tune.Tuner(
            tune.with_resources(nerplat_trial, trial_resources),
            param_space={PHASE_KEY: tune.grid_search(jobs)},
            tune_config=tune.TuneConfig(
                num_samples=1,
                max_concurrent_trials=max(concurrency(arm, limit) for arm in arms),
                reuse_actors=True,
                trial_dirname_creator=lambda trial: trial.trial_id,
            ),
            run_config=self._ray_run_config("replicate", events, max(a.resources.max_retries for a in arms)),
        )
        self._fit(tuner, events, expected=len(jobs))
        return events.errors

    def _register_models(self, arm: Arm, parent_run_id: str) -> None:
        """The arm's chosen replicate models into the MLflow registry (spec `replicate.models`)."""
        from nerplat.serving.mlflow_models import register_arm_models, registered_model_name

        runs = self.ledger.children(parent_run_id)
        mode = self.plan.tune.mode if self.plan.tune else "max"
        name = registered_model_name(self.plan.experiment, arm.id)
        register_arm_models(
            self.tracking_uri, name, runs, self.plan.replicate_models, metric=self.select_metric, split=self.plan.replicate_split, mode=mode
        )

    # -- Ray plumbing ------------------------------------------------------------------------

    def _ray_run_config(self, name: str, events: Any, max_retries: int) -> Any:
        from ray import tune

        experiment_dir = Path(self.storage) / _safe(self.plan.experiment) / name
        if "://" not in self.storage and experiment_dir.exists():
            shutil.rmtree(experiment_dir)  # resume state lives in MLflow; stale Ray state would confuse Tune
        return tune.RunConfig(
            name=f"{_safe(self.plan.experiment)}/{name}",
            storage_path=self.storage,
            callbacks=[events],
            checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
            failure_config=tune.FailureConfig(max_failures=max_retries),
            verbose=0,
        )

    def _fit(self, tuner: Any, events: Any, expected: int, time_budget_s: float | None = None) -> bool:
        """Runs the Tuner; Interrupted when it stopped before all `expected` trials ended (Ctrl-C,
        SIGTERM: Tune then returns early, possibly between two trials); StoreLost from its callbacks.

        Returns True when `time_budget_s` ended it early instead: Tune stops its trials once the
        budget is spent, which is the spec's choice, not an interruption (trials it cut are closed
        as interrupted all the same, so --resume never counts them as finished)."""
        started = time.monotonic()
        try:
            tuner.fit()
        except KeyboardInterrupt:
            events.mark_interrupted()
            raise Interrupted() from None
        except Exception as error:
            lost = _store_lost_in(error)
            if lost is None:
                raise
            raise lost from error
        ended = len(events.outcomes)
        if events.mark_interrupted() or ended < expected:
            if time_budget_s is not None and time.monotonic() - started >= time_budget_s:
                return True
            raise Interrupted()
        return False

    def _analyze(self) -> Any:
        from nerplat.analysis.report import analyze_experiment

        return analyze_experiment(self.plan.experiment, self.tracking_uri, self.report_dir, ("md", "latex", "html", "csv"))


def _summary_status(summary: RunSummary, replicated: bool) -> str:
    """Never `completed` for a run with a failure; a --tune-only run stays `interrupted` until resumed."""
    if summary.failed() or summary.analysis_error:
        return "failed"
    return "completed" if replicated else "interrupted"


def _store_lost_in(error: BaseException) -> StoreLost | None:
    """The StoreLost a Tune callback raised, however Tune wrapped it."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, StoreLost):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _is_local(address: str) -> bool:
    host = address.split("://")[-1].rsplit(":", 1)[0]
    return address == "auto" or host in ("127.0.0.1", "localhost", "::1", "")


def _safe(name: str) -> str:
    """A path component for an arm or experiment id (slashes and odd characters replaced)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
