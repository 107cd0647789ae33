"""`nerplat bench tracking`: the events per second nerplat's tracking path sustains, by store and by
number of concurrent reporting trials, and what `nerplat plan` costs at 100,000 trials.

The tracking path is `run/ledger.py`, the one MLflow writer of a run. A writer here is one process
driving a ledger through the life of tuning trials as Tune's callback does: `start_trial`,
`record_node`, one `record_evaluation` per epoch (the metric keys of a CoNLL-2003 dev evaluation,
one `log_batch` each), `end`. Each of those calls is one event. Writers start together, once all
have imported, connected and opened their arm's run, and each writes its own trials under its own
arm's tune run, so nothing they write collides. Events/s is all writers' events over the wall time
from that start to the last writer's end. A write the store refuses (SQLite's "database is locked")
ends its writer, which is counted as failed; so is a writer process that dies.

In `nerplat run` one driver thread makes every write, so the 1-writer figure is what a run's
tracking sustains; more writers show how far the store itself goes (several drivers on one
store, or a driver that writes in parallel) and where it saturates: the fewest writers whose
events/s reach 90% of the best measured.

Stores: a SQLite file in a scratch folder (the laptop default), always; an `mlflow server` (the
cluster's layout, cluster/base) on PostgreSQL only when asked, on a database given by URI or on
a throwaway cluster started from PostgreSQL's server binaries (`track/local_postgres.py`).
Writers are processes (spawned), each with a Python and MLflow of its own in memory (docs/performance.md,
"Figures behind the code's choices").
"""

from __future__ import annotations

import logging
import os
import queue
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nerplat.bench.runner_overhead import SWEEP_SPEC
from nerplat.catalog import default_catalog
from nerplat.config.experiment import TUNE_SEED
from nerplat.errors import UserInputError
from nerplat.local_servers import LocalMlflowServer
from nerplat.metrics import evaluate_tags
from nerplat.plan.compiler import compile_plan
from nerplat.run.allocator import process_malloc
from nerplat.run.job import TrialJob
from nerplat.run.ledger import RunLedger
from nerplat.track import schema
from nerplat.track.experiment_tracker import ExperimentTracker
from nerplat.track.local_postgres import LocalPostgres, check_postgres_bin
from nerplat.track.store import adopt_uri_credentials, tracking_logger
from nerplat.trial.results import Evaluation, Timings

SATURATION_SHARE = 0.9  # a store saturates at the fewest writers reaching this share of its best events/s
WRITER_START_TIMEOUT = 600.0  # seconds for every writer to import, connect and open its arm's run
CONLL_TYPES = ("PER", "ORG", "LOC", "MISC")
# The `nerplat plan` spec: 2 sizes x 25 partitions x 2 methods = 100 replicate runs per seed
# (the shape of the 100,000-run plan test in tests/unit/plan).
PLAN_RUNS_PER_SEED = 100
PLAN_SPEC = """\
experiment: nerplat-bench-plan
dataset: conll2003
samplers: [{{low_resource: {{size: [10, 20], partitions: 25}}}}]
methods: {{ce: {{loss: ce}}, focal: {{loss: focal}}}}
replicate: {{seeds: {seeds}}}
"""
ONE_RUN_SPEC = """\
experiment: nerplat-bench-plan-one
dataset: conll2003
samplers: [{low_resource: {size: 10, partitions: 1}}]
methods: {ce: {loss: ce}}
replicate: {seeds: 1}
"""


@dataclass
class StoreFigure:
    """What `writers` concurrent reporting trials achieved on one store."""

    store: str
    writers: int
    events: int
    seconds: float
    events_per_s: float
    epoch_write_ms: float  # median time of one per-epoch write (`record_evaluation`), over all writers
    failed_writers: int = 0  # writers the store refused a write (their events up to then count)
    failure: str | None = None  # the first refusal, e.g. SQLite's "database is locked"


@dataclass
class WriterReport:
    """What one writer process sends back."""

    writer: int
    events: int = 0
    epoch_write_seconds: list[float] = field(default_factory=list)
    failure: str | None = None


@dataclass
class PlanFigure:
    """`nerplat plan SPEC` as a user runs it (a fresh process: imports, corpus check, table), and the
    same command on a one-run spec, whose figures are the part that does not grow with the plan."""

    trials: int
    seconds: float
    peak_rss_mb: float
    one_run_seconds: float
    one_run_peak_rss_mb: float

    @property
    def bytes_per_trial(self) -> float:
        return (self.peak_rss_mb - self.one_run_peak_rss_mb) * 2**20 / max(self.trials - 1, 1)


@dataclass
class TrackingBenchResult:
    trials_per_writer: int
    epochs: int
    server_workers: int
    stores: list[StoreFigure] = field(default_factory=list)
    plan: PlanFigure | None = None

    def best(self, store: str) -> StoreFigure | None:
        """The store's highest events/s among the writer counts where no write was refused."""
        clean = (f for f in self.stores if f.store == store and not f.failed_writers)
        return max(clean, key=lambda f: f.events_per_s, default=None)

    def saturation(self, store: str) -> StoreFigure | None:
        """The fewest writers whose events/s reach `SATURATION_SHARE` of the store's best; None when
        that is the most writers measured (still rising, as far as these counts tell) or none ran clean."""
        best = self.best(store)
        if best is None:
            return None
        clean = sorted((f for f in self.stores if f.store == store and not f.failed_writers), key=lambda f: f.writers)
        first = next(f for f in clean if f.events_per_s >= SATURATION_SHARE * best.events_per_s)
        return None if first.writers == max(f.writers for f in self.stores if f.store == store) else first

    def store_names(self) -> list[str]:
        return list(dict.fromkeys(f.store for f in self.stores))

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        saturated = {store: self.saturation(store) for store in self.store_names()}
        data["saturation"] = {store: None if figure is None else figure.writers for store, figure in saturated.items()}
        if self.plan is not None:
            data["plan"]["bytes_per_trial"] = self.plan.bytes_per_trial
        return data


def bench_tracking(
    writer_counts: list[int],
    trials: int,
    epochs: int,
    postgres: str | None = None,
    postgres_bin: Path | None = None,
    server_workers: int = 2,
    plan_trials: int = 100_000,
    log: Callable[[str], None] = lambda line: None,
) -> TrackingBenchResult:
    """SQLite always; an `mlflow server` on PostgreSQL with `postgres` (a URI) or `postgres_bin`."""
    if postgres is not None or postgres_bin is not None:
        check_postgres_options(postgres, postgres_bin)
    arm = compile_plan(SWEEP_SPEC, default_catalog()).arms[0]
    result = TrackingBenchResult(trials_per_writer=trials, epochs=epochs, server_workers=server_workers)
    with tempfile.TemporaryDirectory(prefix="nerplat-bench-tracking-") as scratch:
        stores = {"sqlite": _sqlite_store(Path(scratch))}
        if postgres is not None or postgres_bin is not None:
            stores["postgresql"] = _postgres_server(postgres, postgres_bin, Path(scratch), server_workers, log)
        for store, opened in stores.items():
            with opened as tracking_uri:
                for writers in writer_counts:
                    log(f"{store}: {writers} writer(s) x {trials} trial(s) x {epochs} epochs ...")
                    result.stores.append(measure_writers(store, tracking_uri, arm, writers, trials, epochs))
        if plan_trials:
            log(f"nerplat plan of {plan_trials:,} trials ...")
            result.plan = measure_plan(plan_trials, Path(scratch))
    return result


@contextmanager
def _sqlite_store(scratch: Path) -> Iterator[str]:
    yield f"sqlite:///{scratch / 'mlflow.db'}"


def check_postgres_options(postgres: str | None, postgres_bin: Path | None) -> None:
    """Refuses, before any work, what would fail once SQLite has been measured."""
    if postgres is not None and postgres_bin is not None:
        raise UserInputError("give --postgres (a database to use) or --postgres-bin (start one), not both")
    if postgres is not None and not postgres.startswith("postgresql://"):
        raise UserInputError(f"--postgres takes a postgresql://USER:PASSWORD@HOST:PORT/DATABASE URI, not {postgres!r}")
    if postgres_bin is not None:
        check_postgres_bin(postgres_bin)
    try:
        import psycopg  # noqa: F401  (the server's driver for postgresql:// URIs)
    except ImportError as error:
        raise UserInputError("measuring PostgreSQL needs psycopg: pip install 'nerplat[bench]'") from error


@contextmanager
def _postgres_server(
    postgres: str | None, postgres_bin: Path | None, scratch: Path, workers: int, log: Callable[[str], None]
) -> Iterator[str]:
    """The URL of an `mlflow server` on PostgreSQL: the database `postgres`, or a throwaway cluster."""
    with ExitStack() as stack:
        if postgres is None:
            log(f"starting PostgreSQL from {postgres_bin} ...")
            postgres = stack.enter_context(LocalPostgres(postgres_bin))
        database = adopt_uri_credentials(postgres, os.environ)  # the server inherits PGUSER/PGPASSWORD
        server = LocalMlflowServer(database, scratch / "server-artifacts", workers=workers)
        stack.callback(server.stop)
        log(f"starting mlflow server ({workers} workers) ...")
        yield server.start(timeout=300)


def measure_writers(store: str, tracking_uri: str, arm: Any, writers: int, trials: int, epochs: int) -> StoreFigure:
    """Events/s of `writers` processes, each driving its own ledger through `trials` trials."""
    import multiprocessing

    experiment = f"nerplat-bench-tracking-{writers}w-{secrets.token_hex(4)}"  # fresh, so a given database is never resumed
    tracker = ExperimentTracker.open(tracking_uri, experiment, timeout=30)
    context = multiprocessing.get_context("spawn")  # a forked SQLAlchemy engine would share its connections
    ready, go, outcomes = context.Semaphore(0), context.Event(), context.Queue()
    processes = [
        context.Process(target=write_trials, args=(tracker, arm, writer, trials, epochs, ready, go, outcomes), daemon=True)
        for writer in range(writers)
    ]
    for process in processes:
        process.start()
    try:
        _wait_until_ready(ready, processes, outcomes)
        go.set()
        started = time.perf_counter()
        reports = _collect(outcomes, processes)
        seconds = time.perf_counter() - started
    finally:
        for process in processes:
            process.join(timeout=60)
            if process.is_alive():
                process.terminate()
    events = sum(report.events for report in reports)
    latencies = [latency for report in reports for latency in report.epoch_write_seconds]
    failures = [report.failure for report in reports if report.failure is not None]
    return StoreFigure(
        store, writers, events, seconds, events / seconds, 1000 * statistics.median(latencies) if latencies else float("nan"),
        len(failures), failures[0] if failures else None,
    )  # fmt: skip


def _wait_until_ready(ready: Any, processes: list, outcomes: Any) -> None:
    """Until every writer has imported, connected and opened its arm's run; RuntimeError (the
    writer's own error when it sent one) if one ends before that or they take too long."""
    deadline = time.monotonic() + WRITER_START_TIMEOUT
    waiting = len(processes)
    while waiting:
        if ready.acquire(timeout=1.0):
            waiting -= 1
            continue
        ended = [process for process in processes if process.exitcode is not None]
        if ended:
            try:
                failure = outcomes.get(timeout=5.0).failure
            except queue.Empty:
                failure = f"exit code {ended[0].exitcode}"
            raise RuntimeError(f"a writer failed before the start: {failure}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"writers did not all start within {WRITER_START_TIMEOUT:.0f} s")


def _collect(outcomes: Any, processes: list) -> list[WriterReport]:
    """Every writer's report; a writer process that died without one (a crash) counts as a failed writer."""
    reports: dict[int, WriterReport] = {}
    while len(reports) < len(processes):
        try:
            report = outcomes.get(timeout=1.0)
            reports[report.writer] = report
        except queue.Empty:
            for writer, process in enumerate(processes):
                if writer not in reports and process.exitcode not in (None, 0):
                    reports[writer] = WriterReport(writer, failure=f"the writer process died (exit code {process.exitcode})")
    return list(reports.values())


def write_trials(tracker: Any, arm: Any, writer: int, trials: int, epochs: int, ready: Any, go: Any, outcomes: Any) -> None:
    """One writer (a spawned process): the ledger calls of `trials` tuning trials, as Tune's callback makes them."""
    tracking_logger().setLevel(logging.CRITICAL)  # a refused write is reported by the benchmark, once
    report = WriterReport(writer)
    try:
        ledger = RunLedger(tracker)
        # Its own arm, so its own tune run (trial names never collide), of `epochs` epochs (trials end completed).
        fixed = {**arm.fixed, "train": {**arm.fixed["train"], "epochs": epochs}}
        own_arm = arm.model_copy(update={"id": f"{arm.id}-w{writer}", "fixed": fixed})
        parent = ledger.start_phase(own_arm, "tune", params={}).run_id
        job = TrialJob(
            arm=own_arm, phase="tune", seed=TUNE_SEED, partition=0, eval_split=None, select_metric="micro_f1",
            parent_run_id=parent,
        )  # fmt: skip
        config = {key: space.low for key, space in arm.search_space.items()}
        evaluations = [conll_dev_evaluation(epoch, epochs) for epoch in range(1, epochs + 1)]
        ready.release()
        go.wait()
        for trial in range(trials):
            trial_id = f"w{writer}-t{trial}"
            ledger.start_trial(trial_id, job, config)
            report.events += 1
            ledger.record_node(trial_id, f"node-{writer}", {schema.MALLOC: process_malloc()})
            report.events += 1
            for evaluation in evaluations:
                started = time.perf_counter()
                ledger.record_evaluation(trial_id, evaluation, awaits_checkpoint=False)
                report.epoch_write_seconds.append(time.perf_counter() - started)
                report.events += 1
            ledger.end(trial_id, failed=False)
            report.events += 1
    except Exception as error:
        report.failure = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
    outcomes.put(report)


def conll_dev_evaluation(epoch: int, epochs: int) -> Any:
    """An evaluation with the metric keys of a CoNLL-2003 dev evaluation (56 metrics in one report)."""
    gold = [[f"B-{t}", "O", f"B-{t}", f"I-{t}"] for t in CONLL_TYPES]
    pred = [[f"B-{t}", "O", f"B-{t}", "O"] for t in CONLL_TYPES]
    dev = evaluate_tags(gold, pred)
    timings = Timings(setup=1.0, train=10.0 * epoch, evaluate=epoch, total=11.0 * epoch)
    return Evaluation(epoch, epochs, dev, dev, 1.0 / epoch, timings)


def measure_plan(trials: int, scratch: Path) -> PlanFigure:
    """Wall time and peak RSS of `nerplat plan` on a spec of about `trials` replicate runs, and on one run."""
    seeds = max(1, round(trials / PLAN_RUNS_PER_SEED))
    big, one = scratch / "plan-big.yaml", scratch / "plan-one.yaml"
    big.write_text(PLAN_SPEC.format(seeds=seeds))
    one.write_text(ONE_RUN_SPEC)
    one_seconds, one_rss = _timed_plan(one, scratch)
    seconds, rss = _timed_plan(big, scratch)
    return PlanFigure(seeds * PLAN_RUNS_PER_SEED, seconds, rss, one_seconds, one_rss)


def _timed_plan(spec: Path, scratch: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of `nerplat plan SPEC` in a fresh process.

    The peak is the process's own high-water mark (VmHWM, Linux), read as it ends: a parent's
    `wait4` rusage would also count the benchmark's own memory, which the child holds until exec.
    """
    peak_file = scratch / "plan-peak-kb"
    with open(scratch / "plan.log", "w+") as output:
        started = time.perf_counter()
        command = [sys.executable, "-c", _PEAK_PROBE, str(peak_file), "plan", str(spec)]
        done = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            output.seek(0)
            raise RuntimeError(f"nerplat plan {spec} failed ({done.returncode}):\n{output.read()[-2000:]}")
    return seconds, int(peak_file.read_text()) / 1024


_PEAK_PROBE = """\
import sys
from pathlib import Path
from nerplat.cli import main
code = main(sys.argv[2:])
status = Path("/proc/self/status").read_text().splitlines()
Path(sys.argv[1]).write_text(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
sys.exit(code)
"""
