"""`nerplat plan --cost` on this host: the store's runs read once, a calibration run for what they
lack, and predictions of a plan and of its cuts from both.

A prediction puts every run at its epoch cap, the most early stopping allows. With a pilot (`plan
--cost --pilot`), the plan is predicted again with each arm's epochs at the mean its runs trained
there (`at_pilot_epochs`): what a spec whose runs stop as the pilot's did would take, where the cap
alone can overstate it several times over."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nerplat.estimate.budget import BudgetAdvice, Replan, advise, parse_budget
from nerplat.estimate.calibration import calibrate
from nerplat.estimate.cost import (
    ArmCost,
    Calibration,
    CalibrationKey,
    EpochWork,
    Machine,
    MeasuredRun,
    SpecCost,
    calibration_key,
    duration,
    predict_cost,
    uncalibrated,
)
from nerplat.estimate.host import epoch_work_on_data, this_machine
from nerplat.estimate.store_runs import measured_runs
from nerplat.plan.model import Arm, Plan
from nerplat.track.experiment_reader import open_client
from nerplat.track.store import resolve_tracking_uri, sqlite_path

Calibrate = Callable[[list[Arm], Machine], list[Calibration]]


class HostEstimator:
    """Predicts plans' cost on one machine from one set of earlier runs; an arm the runs do not
    cover is calibrated once per encoder, device, arithmetic, batch size, max_length and head (`calibrate`:
    None predicts nothing for it), and an arm's work is counted on its data once."""

    def __init__(
        self, runs: Iterable[MeasuredRun], machine: Machine, work_of: Callable[[Arm], EpochWork], calibrate: Calibrate | None
    ):
        self.runs, self.machine, self.calibrate = list(runs), machine, calibrate
        self.calibrations: dict[CalibrationKey, Calibration] = {}
        self._work_of, self._work = work_of, {}

    def predict(self, plan: Plan, looks: Sequence[Mapping[str, int]] | None = None) -> SpecCost:
        missing = [
            arm
            for arm in uncalibrated(plan, self.runs, self.machine)
            if calibration_key(arm, self.machine) not in self.calibrations
        ]
        if missing and self.calibrate is not None:
            self.calibrations.update((calibration.key, calibration) for calibration in self.calibrate(missing, self.machine))
        return predict_cost(plan, self.runs, self.machine, self.work_of, looks, self.calibrations.values())

    def work_of(self, arm: Arm) -> EpochWork:
        """The arm's work, counted once for every arm of the same data, model and first replicate
        (cuts of epochs, seeds or trials leave it as it is)."""
        fixed, first = arm.fixed, arm.replicates[0] if arm.replicates else None
        key = json.dumps(
            [fixed[part] for part in ("dataset", "samplers", "encoder", "head", "objective")]
            + [fixed["train"].get("dev_subset"), first and (first.seed, first.partition), arm.partitions[0]],
            sort_keys=True,
            default=str,
        )
        if key not in self._work:
            self._work[key] = self._work_of(arm)
        return self._work[key]


def host_estimator(plan: Plan, tracking_uri: str | None, calibrating: bool = True) -> HostEstimator:
    """A `HostEstimator` on this machine from the runs of the MLflow store at `tracking_uri` (else
    the one `nerplat run` would use here) of the plan's encoders; a store that does not exist has none."""
    uri = tracking_uri or resolve_tracking_uri(plan.tracking_uri, Path("."))
    database = sqlite_path(uri)
    runs = []
    if database is None or database.exists():
        runs = measured_runs(open_client(uri), (arm.fixed["encoder"]["name"] for arm in plan.arms))
    return HostEstimator(runs, this_machine(), epoch_work_on_data, calibrate if calibrating else None)


@dataclass(frozen=True)
class PilotEpochs:
    """Per arm id, the mean epochs a pilot's completed runs of it trained, and where they were read."""

    epochs: dict[str, float]
    source: str


@dataclass(frozen=True)
class PlanEstimate:
    """A plan's predicted cost on this host, the budget held against it (when one was given), and
    its cost at a pilot's epochs (when a pilot gave them)."""

    cost: SpecCost
    budget: BudgetAdvice | None = None
    at_pilot: SpecCost | None = None
    pilot: PilotEpochs | None = None

    @property
    def arms(self) -> list[ArmCost]:
        return self.cost.arms

    def as_dict(self) -> dict[str, Any]:
        extra = {"budget": self.budget.as_dict()} if self.budget is not None else {}
        if self.at_pilot is not None and self.pilot is not None:
            extra["at_pilot_epochs"] = {"epochs": self.pilot.epochs, "source": self.pilot.source,
                                        "wall_s": self.at_pilot.wall_s}
        return self.cost.as_dict() | extra

    def lines(self) -> list[str]:
        return self.cost.lines() + self._pilot_lines() + (self.budget.lines() if self.budget is not None else [])

    def _pilot_lines(self) -> list[str]:
        if self.pilot is None or self.at_pilot is None:
            return []
        labels = {cost.arm: cost.label for cost in self.cost.arms}
        means = ", ".join(f"{labels[arm]} {epochs:.1f}" for arm, epochs in self.pilot.epochs.items() if arm in labels)
        if self.at_pilot.wall_s is None:
            return [f"at the pilot's epochs ({means}; {self.pilot.source}): no prediction (an arm has none)"]
        return [f"predicted wall time at the pilot's epochs {duration(self.at_pilot.wall_s)} (mean epochs its runs trained: "
                f"{means}; {self.pilot.source}; arms it lacks at their cap; every look)"]


def pilot_epochs(frame: Any, source: str) -> PilotEpochs:
    """The mean `stopped_epoch` of each arm's completed runs in a pilot's replicates (`frame`, a
    report's runs.parquet or a store's replicates); none where the runs did not record it."""
    import polars as pl  # lazy: polars, which plan needs only with a pilot

    if "stopped_epoch" not in frame.columns or "arm" not in frame.columns:
        return PilotEpochs({}, source)
    means = (
        frame.filter((pl.col("status") == "completed") & pl.col("stopped_epoch").is_not_null() & pl.col("arm").is_not_null())
        .group_by("arm")
        .agg(pl.col("stopped_epoch").mean())
        .sort("arm")
    )
    return PilotEpochs(dict(zip(means["arm"].to_list(), means["stopped_epoch"].to_list())), source)


def at_pilot_epochs(plan: Plan, pilot: PilotEpochs) -> Plan:
    """`plan` with each arm the pilot ran at the epochs its runs trained there (rounded up, at most the cap)."""
    arms = []
    for arm in plan.arms:
        if arm.id in pilot.epochs:
            train = arm.fixed["train"]
            epochs = min(train["epochs"], max(1, math.ceil(pilot.epochs[arm.id])))
            arm = arm.model_copy(update={"fixed": arm.fixed | {"train": train | {"epochs": epochs}}})
        arms.append(arm)
    return plan.model_copy(update={"arms": arms})


def estimate_plan(
    plan: Plan,
    tracking_uri: str | None,
    looks_of: Callable[[Plan], Sequence[Mapping[str, int]]],
    *,
    calibrating: bool = True,
    budget: str | None = None,
    replan: Replan | None = None,
    pilot: PilotEpochs | None = None,
) -> PlanEstimate:
    """`nerplat plan --cost [--budget] [--pilot]`: the plan's prediction over its looks (`looks_of`),
    with a budget the cuts that fit, each a plan `replan` compiles from the spec with more overrides,
    and with a pilot's epochs the prediction at them."""
    budget_s = parse_budget(budget) if budget is not None else None  # a bad budget fails before any calibration
    estimator = host_estimator(plan, tracking_uri, calibrating)
    cost = estimator.predict(plan, looks_of(plan))
    at_pilot = estimator.predict(at_pilot_epochs(plan, pilot), looks_of(plan)) if pilot is not None and pilot.epochs else None
    pilot = pilot if at_pilot is not None else None
    if budget_s is None or replan is None:
        return PlanEstimate(cost, None, at_pilot, pilot)
    advice = advise(plan, cost.wall_s, budget_s, replan, lambda cut: estimator.predict(cut, looks_of(cut)).wall_s)
    return PlanEstimate(cost, advice, at_pilot, pilot)
