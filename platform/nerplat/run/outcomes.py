"""What `nerplat run` returns: each arm's outcome and the run's summary, which the CLI prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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
    next_look: int | None = None  # a sequential design stopped by --through-look before its end: the look --resume runs

    def failed(self) -> list[ArmOutcome]:
        return [o for o in self.outcomes if o.errors or o.replicates.get("failed")]
