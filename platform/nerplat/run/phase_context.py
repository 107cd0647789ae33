"""What the tune and replicate phases (run/tune_phase.py, run/replicate_phase.py) take from the run:
the runner builds one `PhaseContext` once its ledger and study storage are open, and hands it to both.
It holds values and objects the phases call down into, Ray's side among them (`TuneDriver`), and none
of the runner's own methods: nothing a phase does calls back up into the runner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from nerplat.plan.model import Plan
    from nerplat.run.exported_metrics import TrialMetrics
    from nerplat.run.ledger import RunLedger
    from nerplat.run.progress import ProgressBoard
    from nerplat.run.tune_driver import TuneDriver


@dataclass(frozen=True)
class PhaseContext:
    plan: Plan
    ledger: RunLedger  # every run the phases open, log and end
    board: ProgressBoard
    metrics: TrialMetrics
    console: Console
    tracking_uri: str
    select_metric: str  # the metric, without its `dev_` prefix, that chooses a configuration
    ray: TuneDriver  # connects to Ray once (before a phase builds a Tuner), builds and runs the Tuners
    study_storage: Any = None  # the Optuna storage, open when an arm is tuned
    optuna_storage: str | None = None  # its URL, for messages
    undecidable: frozenset[str] = frozenset()  # claims replicated beyond the first look only when the run is asked to
    registrations: dict[str, str] = field(default_factory=dict)  # claim id -> digest of the registration the run serves
    through_look: int | None = None  # a sequential design stops after this look (1-based); a --resume takes the next
