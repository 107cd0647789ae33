"""The live progress view of `nerplat run`: what is starting, each stage, and per arm and phase the
trial counts, best dev score, elapsed time and an ETA from the measured seconds per epoch.

`ProgressBoard.stage` prints a line at once (opening the store, starting Ray, each phase, the
analysis), so the screen is never blank while something slow starts. While trials run, a terminal
shows the per-phase table redrawn live (rich `Live`); a stream that is not a terminal (CI logs,
nohup) would show that table only at the end, so it gets a plain timestamped status line every
`every` seconds instead. `run.events.TrialEvents` feeds the board from Ray Tune's driver-side
events (trial started, each epoch's evaluation, trial ended), so it works the same for tuning and
replicate phases.

The ETA: each arm's seconds per epoch (training and dev evaluation, `trial.results.Timings`) are
measured from its running and finished trials (other arms' rate stands in until its own is
measured), and each trial's overhead (start-up, test evaluation, logging) from the trials that
ended. A trial then lasts overhead + epochs x seconds per epoch; the running trials' remainders
and the trials still queued are laid on the trial slots in the order the runner starts them, so
the ETA moves every frame, not only when a trial ends. Until a first epoch is measured (a trial
that evaluates only at its end, or not at all), an ended trial's wall time stands for a trial's
length. It reads "estimating" only until a first epoch is measured or a first trial ends, and
"done" only when no trial remains.
"""

from __future__ import annotations

import heapq
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from nerplat.unfolded import print_unfolded

ESTIMATING = "estimating"  # the ETA before a first epoch or trial end: there is nothing to estimate from
DEFAULT_EVERY = 30  # seconds between status lines when the console is not a terminal
PHASE_ORDER = ("tune", "replicate")  # the runner tunes every arm, then runs the replicates


@dataclass
class TrialClock:
    """One running trial: when it started, and what its latest evaluation measured."""

    started: float
    epoch: int = 0
    epochs: int | None = None


@dataclass
class PhaseProgress:
    arm: str
    phase: str
    total: int
    mode: str = "max"
    label: str = ""  # the arm's short label (MLflow's run names); the id when none was given
    epochs: int | None = None  # planned epochs of one trial; None: learnt from its evaluations
    running: int = 0
    finished: int = 0
    stopped: int = 0
    errored: int = 0
    skipped: int = 0  # already finished in an earlier, resumed run
    best: float | None = None
    last_error: str | None = None
    active: dict[str, TrialClock] = field(default_factory=dict)  # Tune trial id -> its clock

    def done(self) -> int:
        return self.finished + self.stopped + self.errored + self.skipped

    def remaining(self) -> int:
        return max(0, self.total - self.done())

    def queued(self) -> int:
        """Trials not started yet."""
        return max(0, self.remaining() - self.running)

    def offer(self, value: float) -> None:
        if self.best is None or (value > self.best if self.mode == "max" else value < self.best):
            self.best = value

    def name(self) -> str:
        return self.label or self.arm


@dataclass
class ArmTimes:
    """What an arm's trials measured: seconds per epoch of each trial, wall time and overhead of each ended trial."""

    epoch_seconds: dict[str, float] = field(default_factory=dict)  # trial id -> (train + evaluate) / epochs done
    overheads: list[float] = field(default_factory=list)  # ended trials: wall seconds beyond their epochs
    walls: list[float] = field(default_factory=list)  # ended trials: wall seconds from start to end
    epochs: int | None = None  # epochs of a trial, as its evaluations say


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def format_duration(seconds: float) -> str:
    """Whole seconds as '42s', '3m05s' or '2h07m'."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def format_eta(seconds: float | None, remaining: int) -> str:
    """'done' when no trial remains, 'estimating' before an epoch is measured, and never '0s'
    while trials remain (a fraction of a second rounds up)."""
    if not remaining:
        return "done"
    if seconds is None:
        return ESTIMATING
    return format_duration(max(1, math.ceil(seconds)))


class ProgressBoard:
    """Every arm and phase of one experiment: stage lines, then a live table or periodic status lines.

    `clock` (wall time in seconds) is injectable so tests can move time; elapsed time counts from
    the board's creation, i.e. from the start of `nerplat run`.
    """

    def __init__(
        self, experiment: str, console: Console, concurrency: int = 1, every: float = DEFAULT_EVERY,
        clock: Callable[[], float] = time.time,
    ):
        self.experiment = experiment
        self.console = console
        self.concurrency = concurrency
        self.every = every
        self.clock = clock
        self.started = clock()
        self.phases: dict[tuple[str, str], PhaseProgress] = {}
        self.labels: dict[str, str] = {}  # arm id -> short label
        self.planned_epochs: dict[str, int] = {}  # arm id -> epochs of its trials, when fixed
        self.times: dict[str, ArmTimes] = {}  # arm id -> what its trials measured
        self._trials: dict[str, PhaseProgress] = {}  # running Tune trial id -> its phase
        self._lock = threading.RLock()  # the status-line thread reads the phases while Tune's callbacks add them
        self._live: Live | None = None
        self._stop: threading.Event | None = None
        self._ticker: threading.Thread | None = None

    def describe(self, arms: Iterable[Any]) -> None:
        """The plan's arms (`plan.model.Arm`): their short labels and, unless searched, their epochs."""
        for arm in arms:
            self.labels[arm.id] = arm.label
            epochs = arm.fixed.get("train", {}).get("epochs")
            if epochs is not None and "train.epochs" not in arm.search_space:
                self.planned_epochs[arm.id] = int(epochs)

    def phase(self, arm: str, phase: str, total: int, mode: str = "max") -> PhaseProgress:
        key = (arm, phase)
        with self._lock:
            if key not in self.phases:
                self.phases[key] = PhaseProgress(arm, phase, total, mode, self.labels.get(arm, ""), self.planned_epochs.get(arm))
            return self.phases[key]

    def _snapshot(self) -> list[PhaseProgress]:
        with self._lock:
            return list(self.phases.values())

    # -- trial events (from `run.events.TrialEvents`) -----------------------------------------

    def trial_started(self, trial_id: str, progress: PhaseProgress) -> None:
        with self._lock:
            progress.running += 1
            progress.active[trial_id] = TrialClock(self.clock())
            self._trials[trial_id] = progress

    def trial_evaluated(self, trial_id: str, epoch: int, epochs: int, epoch_seconds: float) -> None:
        """After epoch `epoch` of `epochs`: the trial's training and dev evaluation took `epoch_seconds`
        per epoch so far (`Timings.train + Timings.evaluate` over `epoch`)."""
        with self._lock:
            progress = self._trials.get(trial_id)
            if progress is None:
                return
            trial = progress.active[trial_id]
            trial.epoch, trial.epochs = epoch, epochs
            times = self.times.setdefault(progress.arm, ArmTimes())
            times.epoch_seconds[trial_id] = epoch_seconds
            times.epochs = epochs

    def trial_ended(self, trial_id: str) -> None:
        """The trial's slot is free; its wall time is a trial's length, what it took beyond its measured epochs its overhead."""
        with self._lock:
            progress = self._trials.pop(trial_id, None)
            if progress is None:
                return
            progress.running = max(0, progress.running - 1)
            trial = progress.active.pop(trial_id)
            times = self.times.setdefault(progress.arm, ArmTimes())
            times.walls.append(self.clock() - trial.started)
            rate = times.epoch_seconds.get(trial_id)
            if rate is not None:
                times.overheads.append(max(0.0, self.clock() - trial.started - trial.epoch * rate))

    # -- numbers ------------------------------------------------------------------------------

    def elapsed(self) -> float:
        return self.clock() - self.started

    def _own_else_all(self, arm: str, measured: Callable[[ArmTimes], Iterable[float]]) -> float | None:
        """The mean of what the arm's trials `measured`; before they measured any, every arm's."""
        own = list(measured(self.times[arm])) if arm in self.times else []
        return _mean(own) if own else _mean(value for times in self.times.values() for value in measured(times))

    def _seconds_per_epoch(self, arm: str) -> float | None:
        return self._own_else_all(arm, lambda times: times.epoch_seconds.values())

    def _overhead(self, arm: str) -> float:
        return self._own_else_all(arm, lambda times: times.overheads) or 0.0

    def _wall(self, arm: str) -> float | None:
        """A trial's length from the trials that ended, for when no epoch is measured yet."""
        return self._own_else_all(arm, lambda times: times.walls)

    def _epochs(self, progress: PhaseProgress) -> int | None:
        if progress.epochs is not None:
            return progress.epochs
        own = self.times.get(progress.arm)
        if own is not None and own.epochs is not None:
            return own.epochs
        return max((times.epochs for times in self.times.values() if times.epochs is not None), default=None)

    def _schedule(self) -> dict[tuple[str, str], float] | None:
        """Seconds from now until each phase's last trial ends, the running trials' remainders and
        the queued trials laid on the trial slots in the runner's order; None before an epoch is
        measured or a trial ends."""
        with self._lock:
            phases = list(self.phases.values())
            now = self.clock()
            ends: dict[tuple[str, str], float] = {(p.arm, p.phase): 0.0 for p in phases}
            running = sum(p.running for p in phases)
            slots = [0.0] * max(1, self.concurrency, running)
            order = sorted(phases, key=lambda p: PHASE_ORDER.index(p.phase) if p.phase in PHASE_ORDER else len(PHASE_ORDER))
            for queued in (False, True):
                for progress in order:
                    if not (progress.queued() if queued else progress.active):
                        continue
                    rate, epochs = self._seconds_per_epoch(progress.arm), self._epochs(progress)
                    measured = rate is not None and epochs is not None
                    duration = self._overhead(progress.arm) + epochs * rate if measured else self._wall(progress.arm)
                    if duration is None:
                        return None
                    if queued:
                        lengths = [duration] * progress.queued()
                    else:
                        lengths = [
                            max(
                                duration - (now - trial.started),
                                ((trial.epochs or epochs) - trial.epoch) * rate if measured else 0.0,
                                0.0,
                            )
                            for trial in progress.active.values()
                        ]
                    key = (progress.arm, progress.phase)
                    for length in lengths:
                        end = heapq.heappop(slots) + length
                        heapq.heappush(slots, end)
                        ends[key] = max(ends[key], end)
            return ends

    def eta_seconds(self) -> float | None:
        """Seconds until every trial of every phase has ended; None until an epoch is measured or a
        trial ends, or before any phase is known (0.0 when none remains)."""
        ends = self._schedule()
        if ends is None or not ends:
            return None
        return max(ends.values())

    def eta_text(self) -> str:
        phases = self._snapshot()
        if not phases:
            return ESTIMATING  # the plan's phases are not known yet: never "done" before anything ran
        return format_eta(self.eta_seconds(), sum(progress.remaining() for progress in phases))

    # -- output -------------------------------------------------------------------------------

    def _stamp(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.clock()))

    def stage(self, message: str) -> None:
        """A line at once, with the time: what starts now (the store, Ray, a phase, the analysis)."""
        print_unfolded(self.console, f"{self._stamp()} {escape(message)}", hanging=20)  # under the time stamp

    def status_line(self) -> str:
        """One plain line: time, elapsed, ETA, trials done, and each phase with trials running."""
        phases = self._snapshot()
        done = sum(min(progress.done(), progress.total) for progress in phases)
        parts = [
            f"elapsed {format_duration(self.elapsed())}",
            f"ETA {self.eta_text()}",
            f"trials {done}/{sum(progress.total for progress in phases)} done",
        ]
        for progress in phases:
            if progress.running:
                best = "" if progress.best is None else f", best dev {progress.best:.4f}"
                parts.append(
                    f"{progress.name()} {progress.phase} {progress.done()}/{progress.total} ({progress.running} running{best})"
                )
        return f"{self._stamp()} " + "; ".join(parts)

    def table(self) -> Table:
        """Per arm (its short label) and phase: trials running, done, stopped and failed, best dev
        score and the phase's ETA; it fits 80 columns."""
        title = f"nerplat run: {self.experiment} · elapsed {format_duration(self.elapsed())} · ETA {self.eta_text()}"
        table = Table(title=title, expand=False)
        table.add_column("arm", min_width=max((len(w) for p in self._snapshot() for w in p.name().split()), default=3))
        for column in ("phase", "run", "done", "stop", "err", "best dev", "ETA"):
            table.add_column(column, justify="left" if column == "phase" else "right", no_wrap=True)
        ends = self._schedule()
        for progress in self._snapshot():
            best = "-" if progress.best is None else f"{progress.best:.4f}"
            end = None if ends is None else ends[(progress.arm, progress.phase)]
            eta = format_eta(end, progress.remaining())
            table.add_row(
                progress.name(),
                progress.phase,
                str(progress.running),
                f"{progress.done()}/{progress.total}",
                str(progress.stopped),
                str(progress.errored),
                best,
                "-" if eta == ESTIMATING else eta,
            )
        return table

    def __rich__(self) -> Table:
        return self.table()  # `Live` renders the board itself, so elapsed time moves between events

    def __enter__(self) -> "ProgressBoard":
        if self.console.is_terminal:
            self._live = Live(self, console=self.console, refresh_per_second=2, transient=False)
            self._live.__enter__()
        else:
            self._stop = threading.Event()
            self._ticker = threading.Thread(target=self._print_status_lines, name="nerplat-progress", daemon=True)
            self._ticker.start()
        return self

    def _print_status_lines(self) -> None:
        while not self._stop.wait(self.every):
            print_unfolded(self.console, self.status_line(), hanging=20, markup=False)  # under the time stamp

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None
            self.console.print()
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None
            self.console.print(self.table())

    def refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()
