"""`nerplat bench run`: what a sweep of short trials costs beyond training, on the real runner.

Runs the tune phase of `bench/sweep.yaml` (20 trials) with the same `ExperimentRunner` as
`nerplat run`, in a scratch directory, then reads the trials' timings from MLflow:

- start-up: trial start (its MLflow run is created when Tune starts it) to its first optimiser step;
- train share: training-step seconds summed over trials / (sweep wall time x trial slots);
- where the slot time goes: start-up, training steps and dev evaluation as each trial timed them,
  the rest of each trial's run (worker start before set-up, reports, checkpoints, MLflow), and the time
  between trials (Tune scheduling the next one), as shares of wall time x slots;
- ratio: tokens/s inside a trial / tokens/s of the same configuration run in-process
  (`nerplat train`'s path), both with the sweep's one torch thread.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

SWEEP_SPEC = Path(__file__).with_name("sweep.yaml")


@dataclass(frozen=True)
class TrialTime:
    """One trial's run (MLflow start to end, unix seconds) and the parts its loop timed."""

    start: float
    end: float
    setup: float
    train: float
    evaluate: float


@dataclass
class SlotTime:
    """Shares of a sweep's slot time (wall time x concurrent trials); they sum to 1."""

    setup: float
    train: float
    evaluate: float
    trial_other: float  # inside a trial's run, outside its timed parts
    between_trials: float

    @classmethod
    def of(cls, trials: list[TrialTime], slots: int) -> SlotTime:
        wall = max(t.end for t in trials) - min(t.start for t in trials)
        total = wall * slots
        setup, train, evaluate = (sum(getattr(t, part) for t in trials) / total for part in ("setup", "train", "evaluate"))
        in_runs = sum(t.end - t.start for t in trials) / total
        return cls(setup, train, evaluate, in_runs - setup - train - evaluate, 1 - in_runs)


@dataclass
class RunBenchResult:
    trials: int
    slots: int
    sweep_wall_s: float
    startup_s: float  # median over trials
    startup_max_s: float  # the first trial of each worker process pays imports and weight loading
    train_share: float
    trial_tokens_per_s: float
    inprocess_tokens_per_s: float
    ratio: float
    slot_time: SlotTime

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class SweepRuns:
    """The MLflow runs of a sweep's tuning trials, and the wall time of the whole run (Ray start included)."""

    trials: list[Any]
    command_s: float


def run_sweep(plan: Any, console: Console) -> SweepRuns:
    """The tune phase of `plan` with the same `ExperimentRunner` as `nerplat run --tune-only`, in a scratch directory."""
    from nerplat.run.runner import ExperimentRunner, RunOptions
    from nerplat.track import schema

    with tempfile.TemporaryDirectory(prefix="nerplat-bench-") as scratch:
        runner = ExperimentRunner(plan, RunOptions(workdir=Path(scratch), analyze=False, replicate=False), console)
        started = time.time()
        runner.run()
        command_s = time.time() - started
        trials = [
            run
            for run in runner.tracker.client.search_runs([runner.tracker.experiment_id], max_results=1000)
            if run.data.tags.get(schema.KIND) == "trial"
        ]
    return SweepRuns(trials, command_s)


def bench_run(console: Console, profile: str | None = None) -> RunBenchResult:
    from nerplat.catalog import default_catalog
    from nerplat.plan.compiler import compile_plan
    from nerplat.trial.loop import run_trial

    plan = compile_plan(SWEEP_SPEC, default_catalog(), profile)
    arm = plan.arms[0]
    sweep = run_sweep(plan, console)
    trials = sweep.trials
    times = [trial_time(run) for run in trials]
    wall = max(t.end for t in times) - min(t.start for t in times)
    startups = sorted(run.data.metrics["time_first_step_unix"] - run.info.start_time / 1000 for run in trials)
    train_seconds = sum(t.train for t in times)
    slots = plan.tune.max_concurrent or 1
    slot_time = SlotTime.of(times, slots)
    tokens = sum(run.data.metrics["train_tokens"] for run in trials)
    console.print(f"sweep of {len(trials)} trials: {sweep.command_s:.1f}s including Ray start")

    sampled = {key: (space.low * space.high) ** 0.5 for key, space in arm.search_space.items()}
    inprocess = run_trial(arm.trial_config(sampled, eval_split=None)).timings.tokens_per_second()
    inside = tokens / train_seconds
    return RunBenchResult(
        trials=len(trials),
        slots=slots,
        sweep_wall_s=wall,
        startup_s=statistics.median(startups),
        startup_max_s=max(startups),
        train_share=slot_time.train,
        trial_tokens_per_s=inside,
        inprocess_tokens_per_s=inprocess,
        ratio=inside / inprocess,
        slot_time=slot_time,
    )


def trial_time(run: Any) -> TrialTime:
    metrics = run.data.metrics
    return TrialTime(
        start=run.info.start_time / 1000,
        end=run.info.end_time / 1000,
        setup=metrics["time_setup_s"],
        train=metrics["time_train_s"],
        evaluate=metrics["time_eval_s"],
    )
