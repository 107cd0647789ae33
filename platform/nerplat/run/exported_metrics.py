"""nerplat's own Prometheus metrics, exported through Ray's metrics API beside Ray's.

`DEFINITIONS` is the one place that names them, with their tags and descriptions: the Grafana
dashboards in `dashboards/grafana/` query them under their exported names (Ray's metrics agent puts
every application metric under `ray_`), and a unit test checks that every nerplat metric a dashboard
queries is defined here.

Only the driver records them. Tune's driver-side callback (`run.events`) already receives every
evaluation a trial reports, with the trial's cumulative timings, so tokens/s and epoch time are
derived there: trials pay nothing per step and import no metrics code. The driver's metrics leave
through the metrics agent of the node it runs on (the head, on KubeRay).

Ray's metrics agent drops a gauge value that is not recorded again within two report intervals
(`metrics_report_interval_ms`, 10 s by default), so `TrialMetrics` keeps the current value of every
series and records them all again every half report interval from a thread of its own. A trial's
series are dropped `LINGER_SECONDS` after it ends (so the last values of a short trial still reach a
Prometheus that scrapes every 15 s) and leave Prometheus about two intervals later; the trial
counts stay while the driver runs. Ray's metrics stop with the driver, so a run someone scrapes
(`--metrics-port`, or a cluster) `hold`s its last values that long before it ends: the final counts
and the last trials' series reach Prometheus too. Telemetry never fails a run: if Ray's metrics API
fails, that is logged once and nothing more is recorded.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from nerplat.run.job import TrialJob
from nerplat.run.progress import PhaseProgress
from nerplat.run_keys import SEPARATOR
from nerplat.trial.results import Evaluation

RAY_PREFIX = "ray_"  # what Ray's metrics agent puts before every application metric's name
LINGER_SECONDS = 30.0

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MetricDefinition:
    """A gauge nerplat exports: its name as recorded through `ray.util.metrics`, its tags and meaning."""

    name: str
    description: str
    tags: tuple[str, ...]

    @property
    def exported_name(self) -> str:
        """The name Prometheus and the dashboards see."""
        return RAY_PREFIX + self.name


# Tags: experiment (the spec's name), arm (its id), phase (tune or replicate), trial (the last part of
# its MLflow run name: t0003, seed1-partition0), node (the Ray node of its rank-0 worker).
_ARM = ("experiment", "arm", "phase")

TRIALS = MetricDefinition(
    "nerplat_trials",
    "Trials of an arm's phase (tune, replicate) started by this driver, by state: running, finished "
    "(all epochs), stopped (early, by the scheduler), failed (after its retries).",
    (*_ARM, "state"),
)
TRIAL_DEV_SCORE = MetricDefinition(
    "nerplat_trial_dev_score",
    "A running trial's dev score at its latest evaluation, by the spec's tune metric (tag metric, e.g. micro_f1).",
    (*_ARM, "trial", "metric"),
)
TRIAL_TOKENS_PER_SECOND = MetricDefinition(
    "nerplat_trial_train_tokens_per_second",
    "A running trial's training throughput so far: real (non-padding) sub-tokens per second of training "
    "steps, measured by its rank-0 worker and multiplied by its workers (each trains an equal share).",
    (*_ARM, "trial", "node"),
)
TRIAL_EPOCH_SECONDS = MetricDefinition(
    "nerplat_trial_epoch_seconds",
    "A running trial's seconds per epoch (training steps and dev evaluation) over the epochs since its "
    "previous evaluation.",
    (*_ARM, "trial", "node"),
)
DEFINITIONS = (TRIALS, TRIAL_DEV_SCORE, TRIAL_TOKENS_PER_SECOND, TRIAL_EPOCH_SECONDS)

Series = tuple[str, tuple[tuple[str, str], ...]]  # (metric name, sorted tags)


def series(definition: MetricDefinition, **tags: str) -> Series:
    if set(tags) != set(definition.tags):
        raise ValueError(f"{definition.name} takes tags {definition.tags}, got {tuple(tags)}")
    return definition.name, tuple(sorted(tags.items()))


def trial_counts(experiment: str, progress: PhaseProgress) -> dict[Series, float]:
    """The `nerplat_trials` series of one arm's phase, from its progress on the board."""
    counts = {"running": progress.running, "finished": progress.finished, "stopped": progress.stopped, "failed": progress.errored}
    arm = {"experiment": experiment, "arm": progress.arm, "phase": progress.phase}
    return {series(TRIALS, **arm, state=state): float(count) for state, count in counts.items()}


def evaluation_values(
    experiment: str, job: TrialJob, trial: str, node: str, evaluation: Evaluation, previous: tuple[int, float] | None
) -> dict[Series, float]:
    """A trial's series after an evaluation. `previous` is (epoch, seconds of training and evaluation)
    at its previous evaluation, (0, 0.0) before its first, None when unknown (after a retry restarted
    its timings): then its epoch time waits for the next evaluation."""
    arm = {"experiment": experiment, "arm": job.arm.id, "phase": job.phase, "trial": trial}
    timings = evaluation.timings
    values = {series(TRIAL_TOKENS_PER_SECOND, **arm, node=node): timings.tokens_per_second() * job.arm.resources.workers}
    if job.select_metric in evaluation.dev:
        values[series(TRIAL_DEV_SCORE, **arm, metric=job.select_metric)] = evaluation.dev[job.select_metric]
    seconds = timings.train + timings.evaluate
    if previous is not None and evaluation.epoch > previous[0] and seconds > previous[1]:
        values[series(TRIAL_EPOCH_SECONDS, **arm, node=node)] = (seconds - previous[1]) / (evaluation.epoch - previous[0])
    return values


class TrialMetrics:
    """The current value of every nerplat series of one experiment, recorded through Ray once started."""

    def __init__(self, experiment: str, linger_seconds: float = LINGER_SECONDS):
        self.experiment = experiment
        self.linger_seconds = linger_seconds
        self._counts: dict[Series, float] = {}
        self._trials: dict[str, dict[Series, float]] = {}  # Tune trial id -> its series
        self._ended: dict[str, float] = {}  # Tune trial id -> when (time.monotonic) its series are dropped
        self._last_evaluation: dict[str, tuple[int, float] | None] = {}  # Tune trial id -> `previous` of its next one
        self._changed = time.monotonic()  # when a value last changed
        self._lock = threading.Lock()
        self._gauges: dict[str, Any] = {}
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what the driver's Tune callback tells it -----------------------------------------------

    def counted(self, progress: PhaseProgress) -> None:
        counts = trial_counts(self.experiment, progress)
        with self._lock:
            if any(self._counts.get(key) != value for key, value in counts.items()):
                self._counts.update(counts)
                self._changed = time.monotonic()

    def evaluated(self, trial_id: str, job: TrialJob, run_name: str, node: str, evaluation: Evaluation) -> None:
        # `t0003`, `p0-s1`: the run name within arm and phase, in ASCII (Ray's metrics API encodes tags as ASCII)
        trial = run_name.removeprefix(f"{job.arm.label}{SEPARATOR}").replace(SEPARATOR, "-")
        with self._lock:
            previous = self._last_evaluation.get(trial_id, (0, 0.0))
            self._trials[trial_id] = evaluation_values(self.experiment, job, trial, node, evaluation, previous)
            self._last_evaluation[trial_id] = (evaluation.epoch, evaluation.timings.train + evaluation.timings.evaluate)
            self._changed = time.monotonic()

    def retried(self, trial_id: str) -> None:
        """The trial restarts from a checkpoint with fresh timings: its next epoch time is unknown."""
        with self._lock:
            self._last_evaluation[trial_id] = None

    def ended(self, trial_id: str) -> None:
        with self._lock:
            self._last_evaluation.pop(trial_id, None)
            if trial_id in self._trials:
                self._ended[trial_id] = time.monotonic() + self.linger_seconds
                self._changed = time.monotonic()

    def current(self) -> dict[Series, float]:
        """Every series to export now."""
        with self._lock:
            now = time.monotonic()
            for trial_id in [trial_id for trial_id, until in self._ended.items() if until <= now]:
                del self._trials[trial_id], self._ended[trial_id]
            return {**self._counts, **{key: value for values in self._trials.values() for key, value in values.items()}}

    # -- export through Ray -----------------------------------------------------------------

    def start(self) -> None:
        """Creates Ray's gauges and starts recording (in a process connected to Ray)."""
        try:
            import ray
            from ray.util.metrics import Gauge

            # Ray's private config, but what its agent derives a gauge value's time-to-live from
            # (twice this, floored at 1 s).
            interval = max(ray._config.metrics_report_interval_ms(), 1000) / 1000
            self._gauges = {d.name: Gauge(d.name, description=d.description, tag_keys=d.tags) for d in DEFINITIONS}
        except Exception as error:  # any failure of Ray's metrics API (missing agent, client mode, ...)
            _log.warning("nerplat's metrics are not exported: Ray's metrics API failed (%s)", error)
            return
        self._thread = threading.Thread(target=self._record_every, args=(interval / 2,), name="nerplat-metrics", daemon=True)
        self._thread.start()

    def hold_seconds(self) -> float:
        """How long the latest change still has to be exported to have been for `linger_seconds`
        (0 when nothing is exported)."""
        if self._thread is None:
            return 0.0
        with self._lock:
            return max(0.0, self._changed + self.linger_seconds - time.monotonic())

    def hold(self) -> None:
        """Keeps exporting until the latest change has been exported for `linger_seconds`."""
        self._stopped.wait(self.hold_seconds())

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()

    def _record_every(self, seconds: float) -> None:
        while not self._stopped.is_set():
            try:
                for (name, tags), value in self.current().items():
                    self._gauges[name].set(value, tags=dict(tags))
            except Exception as error:  # telemetry never fails a run
                _log.warning("nerplat's metrics are no longer exported: Ray's metrics API failed (%s)", error)
                return
            self._stopped.wait(seconds)
