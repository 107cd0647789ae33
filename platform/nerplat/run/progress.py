"""The live progress view of `nerplat run`: what is starting, each stage, and per arm and phase the
trial counts, best dev score, elapsed time and an overall ETA from measured trial times.

`ProgressBoard.stage` prints a line at once (opening the store, starting Ray, each phase, the
analysis), so the screen is never blank while something slow starts. While trials run, a terminal
shows the per-phase table redrawn live (rich `Live`); a stream that is not a terminal (CI logs,
nohup) would show that table only at the end, so it gets a plain timestamped status line every
`every` seconds instead. `run.events.TrialEvents` feeds the board from Ray Tune's driver-side
events, so it works the same for tuning and replicate phases.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

ESTIMATING = "estimating"  # the ETA before any trial has ended: there is nothing to estimate from
DEFAULT_EVERY = 30  # seconds between status lines when the console is not a terminal


@dataclass
class PhaseProgress:
    arm: str
    phase: str
    total: int
    mode: str = "max"
    running: int = 0
    finished: int = 0
    stopped: int = 0
    errored: int = 0
    skipped: int = 0  # already finished in an earlier, resumed run
    best: float | None = None
    trial_seconds: list[float] = field(default_factory=list)
    last_error: str | None = None

    def done(self) -> int:
        return self.finished + self.stopped + self.errored + self.skipped

    def remaining(self) -> int:
        return max(0, self.total - self.done())

    def offer(self, value: float) -> None:
        if self.best is None or (value > self.best if self.mode == "max" else value < self.best):
            self.best = value

    def work_seconds(self, fallback: float | None) -> float | None:
        """Trial-seconds still to run: remaining trials times this phase's mean measured trial time,
        or `fallback` (the mean over all phases) until one of its own trials has ended."""
        if not self.remaining():
            return 0.0
        mean = sum(self.trial_seconds) / len(self.trial_seconds) if self.trial_seconds else fallback
        return None if mean is None else mean * self.remaining()


def format_duration(seconds: float) -> str:
    """Whole seconds as '42s', '3m05s' or '2h07m'."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def format_eta(seconds: float | None, remaining: int) -> str:
    """'done' when no trial remains, 'estimating' before a trial time is known, and never '0s'
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
        self._lock = threading.Lock()  # the status-line thread reads the phases while Tune's callbacks add them
        self._live: Live | None = None
        self._stop: threading.Event | None = None
        self._ticker: threading.Thread | None = None

    def phase(self, arm: str, phase: str, total: int, mode: str = "max") -> PhaseProgress:
        key = (arm, phase)
        with self._lock:
            if key not in self.phases:
                self.phases[key] = PhaseProgress(arm, phase, total, mode)
            return self.phases[key]

    def _snapshot(self) -> list[PhaseProgress]:
        with self._lock:
            return list(self.phases.values())

    # -- numbers ------------------------------------------------------------------------------

    def elapsed(self) -> float:
        return self.clock() - self.started

    def _fallback_mean(self, phases: list[PhaseProgress]) -> float | None:
        measured = [seconds for progress in phases for seconds in progress.trial_seconds]
        return sum(measured) / len(measured) if measured else None

    def eta_seconds(self) -> float | None:
        """Seconds until every trial of every phase has ended: the remaining trial-seconds of all
        phases over the trial slots; None until a trial has ended (0.0 when none remains)."""
        phases = self._snapshot()
        fallback = self._fallback_mean(phases)
        work = [progress.work_seconds(fallback) for progress in phases]
        if any(seconds is None for seconds in work):
            return None
        return sum(work) / max(1, self.concurrency)

    def eta_text(self) -> str:
        return format_eta(self.eta_seconds(), sum(progress.remaining() for progress in self._snapshot()))

    # -- output -------------------------------------------------------------------------------

    def _stamp(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.clock()))

    def stage(self, message: str) -> None:
        """A line at once, with the time: what starts now (the store, Ray, a phase, the analysis)."""
        self.console.print(f"{self._stamp()} {escape(message)}", soft_wrap=True, highlight=False)

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
                parts.append(f"{progress.arm} {progress.phase} {progress.done()}/{progress.total} ({progress.running} running{best})")
        return f"{self._stamp()} " + "; ".join(parts)

    def table(self) -> Table:
        title = f"nerplat run: {self.experiment} · elapsed {format_duration(self.elapsed())} · ETA {self.eta_text()}"
        table = Table(title=title, expand=False)
        table.add_column("arm", overflow="fold")
        for column in ("phase", "running", "done", "stopped", "errored", "best dev", "ETA"):
            table.add_column(column, justify="left" if column == "phase" else "right", no_wrap=True)
        phases = self._snapshot()
        fallback = self._fallback_mean(phases)
        for progress in phases:
            best = "-" if progress.best is None else f"{progress.best:.4f}"
            work = progress.work_seconds(fallback)
            table.add_row(
                progress.arm,
                progress.phase,
                str(progress.running),
                f"{progress.done()}/{progress.total}",
                str(progress.stopped),
                str(progress.errored),
                best,
                format_eta(None if work is None else work / max(1, self.concurrency), progress.remaining()),
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
            self.console.print(self.status_line(), soft_wrap=True, highlight=False, markup=False)

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
