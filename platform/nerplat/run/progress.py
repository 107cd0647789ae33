"""The live progress view of `nerplat run`: per arm and phase, trial counts, best dev score, ETA.

`ProgressBoard` is plain bookkeeping plus a rich table; `run.events.TrialEvents` feeds it from Ray
Tune's driver-side events, so the board works the same for tuning and replicate phases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table


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
    started_at: float | None = None
    trial_seconds: list[float] = field(default_factory=list)
    last_error: str | None = None

    def done(self) -> int:
        return self.finished + self.stopped + self.errored + self.skipped

    def offer(self, value: float) -> None:
        if self.best is None or (value > self.best if self.mode == "max" else value < self.best):
            self.best = value

    def eta_seconds(self, concurrency: int) -> float | None:
        remaining = self.total - self.done()
        if remaining <= 0:
            return 0.0
        if not self.trial_seconds:
            return None
        mean = sum(self.trial_seconds) / len(self.trial_seconds)
        return mean * remaining / max(1, concurrency)


def _format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class ProgressBoard:
    """Every arm and phase of one experiment, rendered as a live table on the console."""

    def __init__(self, experiment: str, console: Console, concurrency: int = 1):
        self.experiment = experiment
        self.console = console
        self.concurrency = concurrency
        self.phases: dict[tuple[str, str], PhaseProgress] = {}
        self._live: Live | None = None

    def phase(self, arm: str, phase: str, total: int, mode: str = "max") -> PhaseProgress:
        key = (arm, phase)
        if key not in self.phases:
            self.phases[key] = PhaseProgress(arm, phase, total, mode)
        return self.phases[key]

    def table(self) -> Table:
        table = Table(title=f"nerplat run: {self.experiment}", expand=False)
        table.add_column("arm", overflow="fold")
        for column in ("phase", "running", "done", "stopped", "errored", "best dev", "ETA"):
            table.add_column(column, justify="left" if column == "phase" else "right", no_wrap=True)
        for progress in self.phases.values():
            best = "-" if progress.best is None else f"{progress.best:.4f}"
            table.add_row(
                progress.arm,
                progress.phase,
                str(progress.running),
                f"{progress.done()}/{progress.total}",
                str(progress.stopped),
                str(progress.errored),
                best,
                _format_eta(progress.eta_seconds(self.concurrency)),
            )
        return table

    def __enter__(self) -> "ProgressBoard":
        self._live = Live(self.table(), console=self.console, refresh_per_second=2, transient=False)
        self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.update(self.table())
            self._live.__exit__(*exc)
            self._live = None
            self.console.print()

    def refresh(self) -> None:
        if self._live is not None:
            self._live.update(self.table())
