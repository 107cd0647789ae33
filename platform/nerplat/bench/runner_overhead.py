"""`nerplat bench run`: what a sweep of short trials costs beyond training, on the real runner.

Runs the tune phase of `bench/sweep.yaml` (20 trials) with the same `ExperimentRunner` as
`nerplat run`, in a scratch directory, then reads the trials' timings from MLflow:

- start-up: trial start (its MLflow run is created when Tune starts it) to its first optimiser step;
- train share: training-step seconds summed over trials / (sweep wall time x trial slots);
- where the slot time goes: start-up, training steps and dev evaluation as each trial timed them,
  the rest of each trial's run (worker start before set-up, reports, checkpoints, MLflow), and the time
  between trials (Tune scheduling the next one), as shares of wall time x slots;
- ratio: tokens/s inside a trial / tokens/s of the same configuration run in-process
  (`nerplat train`'s path), both with the sweep's torch threads.

Repeats (`bench.repeats`): the sweep runs once (its 20 trials take minutes), and its trials, in the
order they started, are cut into `repeats` blocks of consecutive trials (4 each by default); each
block's slot time runs from its first trial's start to the next block's (the last block: to its last
trial's end), so the blocks' slot times add up to the sweep's. The shares, training share and
tokens/s inside a trial are given for the whole sweep and as the median (min-max) over the blocks;
the first block holds the worker process's start. Start-up is the median (min-max) over trials. The
in-process run is repeated `repeats` times after the sweep, each ratio taken against one block.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from rich.console import Console

from nerplat.bench.repeats import DEFAULT_REPEATS, Spread, check_repeats, ratios
from nerplat.catalog import default_catalog
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource
from nerplat.run.runner import ExperimentRunner, RunOptions
from nerplat.trial.loop import run_trial

SWEEP_SPEC = Path(__file__).with_name("sweep.yaml")


@dataclass(frozen=True)
class TrialTime:
    """One trial's run (MLflow start to end, unix seconds) and the parts its loop timed."""

    start: float
    end: float
    setup: float
    train: float
    evaluate: float
    tokens: float = 0.0  # real sub-tokens through its training steps


@dataclass
class SlotTime:
    """Shares of a sweep's slot time (wall time x concurrent trials); they sum to 1."""

    setup: float
    train: float
    evaluate: float
    trial_other: float  # inside a trial's run, outside its timed parts
    between_trials: float

    @classmethod
    def of(cls, trials: list[TrialTime], slots: int, until: float | None = None) -> SlotTime:
        """Shares of the slot time from the first trial's start to `until` (default: the last trial's end)."""
        wall = (until if until is not None else max(t.end for t in trials)) - min(t.start for t in trials)
        total = wall * slots
        setup, train, evaluate = (sum(getattr(t, part) for t in trials) / total for part in ("setup", "train", "evaluate"))
        in_runs = sum(t.end - t.start for t in trials) / total
        return cls(setup, train, evaluate, in_runs - setup - train - evaluate, 1 - in_runs)


SHARE_NAMES = {
    "setup": "start-up (trial start to first step)",
    "train": "training steps",
    "evaluate": "dev evaluation",
    "trial_other": "rest of each trial's run (worker start, reports, checkpoints, MLflow)",
    "between_trials": "between trials (Tune starting the next)",
}


@dataclass
class RunBenchResult:
    trials: int
    slots: int
    repeats: int  # blocks of consecutive trials, and in-process runs
    sweep_wall_s: float
    startup_s: Spread  # over trials; its max is the first trial of a worker process (imports, weight loading)
    train_share: float  # of the whole sweep's slot time
    slot_time: SlotTime  # of the whole sweep
    block_slot_time: dict[str, Spread]  # each share of `SlotTime` over the blocks
    trial_tokens_per_s: Spread  # over the blocks
    inprocess_tokens_per_s: Spread
    ratio: Spread  # a block's tokens/s inside a trial / an in-process run's

    def as_dict(self) -> dict:
        return asdict(self)

    def rows(self) -> list[tuple[str, str]]:
        return [
            ("start-up, trial start to first step, s (over trials)", self.startup_s.text(2)),
            ("sweep wall time, s", f"{self.sweep_wall_s:.1f}"),
            ("share of slot time in training steps (sweep)", f"{self.train_share:.3f}"),
            ("share of slot time in training steps (blocks)", self.block_slot_time["train"].text(3)),
            ("tokens/s inside a trial (blocks)", self.trial_tokens_per_s.text(0)),
            ("tokens/s in-process (nerplat train)", self.inprocess_tokens_per_s.text(0)),
            ("ratio (trial / in-process)", self.ratio.text(3)),
        ]

    def share_rows(self) -> list[tuple[str, str]]:
        """Each share of the slot time: the whole sweep's, then the blocks' median (min-max)."""
        return [
            (label, f"{getattr(self.slot_time, name):.3f}   {self.block_slot_time[name].text(3)}")
            for name, label in SHARE_NAMES.items()
        ]


@dataclass
class SweepRuns:
    """The MLflow runs of a sweep's tuning trials, and the wall time of the whole run (Ray start included)."""

    trials: list[Any]
    command_s: float


def run_sweep(plan: Any, console: Console) -> SweepRuns:
    """The tune phase of `plan` with the same `ExperimentRunner` as `nerplat run --tune-only`, in a scratch directory."""
    with tempfile.TemporaryDirectory(prefix="nerplat-bench-") as scratch:
        runner = ExperimentRunner(plan, RunOptions(workdir=Path(scratch), analyze=False, replicate=False), console)
        started = time.time()
        runner.run()
        command_s = time.time() - started
        trials = runner.tracker.edits.runs_of_kind("trial")
    return SweepRuns(trials, command_s)


def bench_run(console: Console, profile: str | None = None, repeats: int = DEFAULT_REPEATS) -> RunBenchResult:
    repeats = check_repeats(repeats)
    plan = compile_plan(SpecSource(SWEEP_SPEC, profile), default_catalog())
    arm = plan.arms[0]
    if arm.tune_trials < repeats:
        raise ValueError(f"the sweep has {arm.tune_trials} trials, fewer than the {repeats} blocks to cut it into")
    sweep = run_sweep(plan, console)
    runs = sorted(sweep.trials, key=lambda run: run.info.start_time)
    times = [trial_time(run) for run in runs]
    slots = plan.tune.max_concurrent or 1
    blocks = trial_blocks(times, repeats)
    block_shares = [
        SlotTime.of(block, slots, until=following[0].start if following else None)
        for block, following in zip(blocks, [*blocks[1:], []])
    ]
    inside = [sum(t.tokens for t in block) / sum(t.train for t in block) for block in blocks]
    console.print(f"sweep of {len(runs)} trials: {sweep.command_s:.1f}s including Ray start")

    sampled = {key: (space.low * space.high) ** 0.5 for key, space in arm.search_space.items()}
    console.print(f"the sweep's trial in-process, {repeats} times ...")
    inprocess = [run_trial(arm.trial_config(sampled, eval_split=None)).timings.tokens_per_second() for _ in range(repeats)]
    slot_time = SlotTime.of(times, slots)
    return RunBenchResult(
        trials=len(runs),
        slots=slots,
        repeats=repeats,
        sweep_wall_s=max(t.end for t in times) - min(t.start for t in times),
        startup_s=Spread.of([run.data.metrics["time_first_step_unix"] - run.info.start_time / 1000 for run in runs]),
        train_share=slot_time.train,
        slot_time=slot_time,
        block_slot_time={f.name: Spread.of([getattr(shares, f.name) for shares in block_shares]) for f in fields(SlotTime)},
        trial_tokens_per_s=Spread.of(inside),
        inprocess_tokens_per_s=Spread.of(inprocess),
        ratio=ratios(inside, inprocess),
    )


def trial_blocks(trials: list[TrialTime], count: int) -> list[list[TrialTime]]:
    """`trials` (in start order) cut into `count` runs of consecutive trials, as equal in size as can be."""
    size, extra = divmod(len(trials), count)
    blocks, start = [], 0
    for index in range(count):
        end = start + size + (index < extra)
        blocks.append(trials[start:end])
        start = end
    return blocks


def trial_time(run: Any) -> TrialTime:
    metrics = run.data.metrics
    return TrialTime(
        start=run.info.start_time / 1000,
        end=run.info.end_time / 1000,
        setup=metrics["time_setup_s"],
        train=metrics["time_train_s"],
        evaluate=metrics["time_eval_s"],
        tokens=metrics["train_tokens"],
    )
