"""What a plan promises its claims before anything runs: equal tuning effort, cost under the
design, and whether the design can decide them at all.

A comparison is only as fair as the effort each side got: the same tune trials, the same searched
training keys (the learning rate above all) and the same epochs. `unequal_effort` lists every claim
whose arms differ (a method's own hyper-parameters, such as MoM's lambda, are what it is, not
effort); `nerplat validate` and `nerplat plan` print them, unless the claim's `unequal_effort` says why.

A design that cannot decide a claim wastes every run spent on it. `claim_power` gives, from the
sd of the claim's unit-level paired differences in a pilot (the claim's `pilot_sd`, else a report
folder's runs or an earlier run's MLflow store: `pilot_sds`), the paper's effect in sd units, the design's power at it and the
units a power of 0.8 needs; a claim below UNDECIDABLE_POWER is undecidable at this budget, and
the runner replicates its arms beyond the first look only when asked (`run.looks.needed_arms`).
A claim of a direction only (no paper effect) is sized on the pilot's own mean difference when
the pilot gives one: shown, never gated, since a pilot's difference is itself an estimate.
`claim_costs` adds, per claim, the design and, where earlier runs measured the throughput
(`estimate.cost`), the wall time of its arms' trials at the most.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nerplat.analysis.boundaries import boundaries
from nerplat.analysis.sequential import (
    SIMULATIONS,
    VerdictRule,
    design_power,
    equivalence_power,
    equivalence_units,
    look_schedule,
    operating_characteristics,
    units_for_power,
)
from nerplat.analysis.stats import MAX_PAIRS, POWER
from nerplat.config.experiment import BEST_OTHER, Claim
from nerplat.errors import Problem, UserInputError
from nerplat.plan.model import Arm, Plan
from nerplat.plan.units import arm_units, partitioned, unit_replicates
from nerplat.track.experiment_reader import open_client

if TYPE_CHECKING:
    import polars as pl

UNDECIDABLE_POWER = 0.5  # below it at the design's most units, a claim is not replicated beyond the first look


def claim_arms(arms: Sequence[Arm], claim: Claim) -> list[tuple[Arm, list[Arm]]]:
    """Per setting the claim covers, the method's arm and its partner arms (every other arm for best_other)."""
    where = claim.where
    found = []
    for arm in arms:
        if arm.method != claim.method or where.dataset not in (None, arm.dataset) or where.sampler not in (None, arm.sampler):
            continue
        sampler = claim.partner_sampler or arm.sampler
        same = [a for a in arms if (a.dataset, a.sampler) == (arm.dataset, sampler) and a.id != arm.id]
        partners = same if claim.partner == BEST_OTHER else [a for a in same if a.method == claim.partner]
        found.append((arm, partners))
    return found


def effort(arm: Arm) -> tuple[int, tuple[str, ...], object]:
    """Tune trials, searched training keys and epochs (a value, or the searched distribution's label)."""
    searched = tuple(sorted(key for key in arm.search_space if key.startswith("train.")))
    epochs = arm.search_space["train.epochs"].label() if "train.epochs" in arm.search_space else arm.fixed["train"].get("epochs")
    return arm.tune_trials, searched, epochs


def unequal_effort(plan: Plan) -> list[str]:
    """One line per claim and pair of arms whose tuning effort differs."""
    lines = []
    for claim in plan.claims:
        if claim.unequal_effort:  # the spec says why (the paper's own protocol, say): the report shows it
            continue
        for arm, partners in claim_arms(plan.arms, claim):
            mine = effort(arm)
            for partner in partners:
                theirs = effort(partner)
                if mine != theirs:
                    lines.append(
                        f"claim {claim.id}: unequal tuning effort, {arm.label} {_effort_text(mine)} against "
                        f"{partner.label} {_effort_text(theirs)}: give both the same trials, searched training keys and epochs, "
                        "or say in the spec why one is fixed"
                    )
    return lines


def _effort_text(value: tuple[int, tuple[str, ...], object]) -> str:
    trials, searched, epochs = value
    return f"({trials} trials, searching {', '.join(searched) or 'no training key'}, {epochs} epochs)"


@dataclass(frozen=True)
class ClaimPower:
    """Whether a claim can be decided at this budget, from the sd of its unit-level paired
    differences in a pilot (`sd`, found at `source`; None: no pilot).

    `target` is the effect the design must detect: the paper's effect for a superior claim, the
    margin for an equivalent one (judged at a true difference of 0), None for a direction only,
    whose power is then taken at the pilot's mean difference (`pilot_difference`, None without one).
    `power` is the chance at `units` units at `alpha`, `units_needed` the units for POWER; both NaN
    where unknown. Both are the fixed design's (`sequential.design_power`, `units_for_power`): for
    a sequential design ending at `units` the power is an upper bound, since its earlier looks
    spend some alpha. An equivalent claim's TOST needs both one-sided tests at `alpha` to reject;
    its power is bounded below by 2 p - 1, p the power of one of them, and that bound is what is
    shown (`sequential.equivalence_power`).

    Under a sequential design (`looks`), `sequential_power` is the design's own chance, simulated
    with normal unit-level differences (`sequential.operating_characteristics`): of deciding for
    the size's side (the paper's effect, or the pilot's difference) or, for an equivalent claim, of
    `equivalent` at a true difference of 0; `expected_units` is the mean units at stopping there.
    `looks` are the design's (`sequential.look_schedule`, as `verdicts.claim_looks`), empty for a
    fixed design. The gate (`undecidable`) reads `power_as_run`: it is the design that runs.
    """

    claim: str
    kind: str
    target: float | None
    sd: float | None
    source: str
    units: int
    unit: str  # "partition" or "seed"
    alpha: float
    power: float
    units_needed: float
    pilot_difference: float | None = None
    looks: tuple[int, ...] = ()
    sequential_power: float = math.nan
    expected_units: float = math.nan

    @property
    def power_as_run(self) -> float:
        """The power of the design that runs: the sequential one's where simulated, else the fixed one's."""
        return self.sequential_power if math.isfinite(self.sequential_power) else self.power

    @property
    def undecidable(self) -> bool:
        """Power below UNDECIDABLE_POWER at the paper's effect or margin: replicating it beyond the
        first look is waste. Never at a pilot's difference, an estimate the design exists to test."""
        return self.target is not None and math.isfinite(self.power_as_run) and self.power_as_run < UNDECIDABLE_POWER

    def line(self) -> str:
        if self.sd is None:
            return f"claim {self.claim}: no pilot sd: power unknown"
        parts = [f"claim {self.claim}: pilot sd {self.sd:.4g} ({self.source})"]
        if self.target is None and self.pilot_difference is None:
            return "; ".join(parts + ["direction only (the paper gives no effect): power unknown"])
        if self.target is None:
            parts.append(f"direction only (the paper gives no effect): at the pilot's difference {self.pilot_difference:+.4g}"
                         f" = {abs(self.pilot_difference) / self.sd:.2f} sd")
        else:
            what = f"margin {self.target:.4g}" if self.kind == "equivalent" else f"paper effect {self.target:+.4g}"
            parts.append(f"{what} = {abs(self.target) / self.sd:.2f} sd")
        fixed = "fixed design " if self.looks else ""
        parts.append(f"{fixed}power {self.power:.2f} at {self.units} {self.unit}s (alpha {self.alpha:.3g})")
        needed = f"{math.ceil(self.units_needed)}" if math.isfinite(self.units_needed) else f"more than {MAX_PAIRS:,}"
        parts.append(f"{needed} {self.unit}s for power {POWER:g}")
        if math.isfinite(self.sequential_power):
            parts.append(
                f"the sequential design (looks at {list(self.looks)}): power {self.sequential_power:.2f}, "
                f"{self.expected_units:.1f} {self.unit}s expected at stopping ({SIMULATIONS:,} simulated experiments)"
            )
        if self.undecidable:
            parts.append(f"undecidable at this budget (needs {needed} units)")
        return "; ".join(parts)


@dataclass(frozen=True)
class ClaimCost:
    """A claim's arms, what the design spends on it at the most, and whether it can decide it."""

    claim: str
    arms: tuple[str, ...]
    tune_trials: int
    design: str
    wall_s: float | None  # its arms' tune trials and replicates at the most, from measured throughput
    power: ClaimPower

    def lines(self) -> list[str]:
        power = self.power
        cost = (
            f"claim {self.claim}: {len(self.arms)} arms, {self.tune_trials} tune trials, "
            f"at most {power.units} {power.unit}s ({self.design})"
        )
        if self.wall_s is not None:
            cost += f"; at most {self.wall_s / 3600:.1f} h of its arms' trials"
        return [cost, "  " + power.line()]


def claim_costs(
    plan: Plan, trial_seconds: dict[str, float] | None = None, pilot: dict[str, PilotSd] | None = None
) -> list[ClaimCost]:
    """Per claim: arms, tune trials, the design, its power (`claim_power`, from the claim's
    `pilot_sd`, else `pilot`) and, with `trial_seconds` (arm id -> predicted seconds of one run,
    from `estimate.cost`), the wall time of its arms' trials one at a time at the design's most."""
    costs = []
    for claim in plan.claims:
        arms = _claim_arm_list(plan, claim)
        if not arms:
            continue
        power = claim_power(plan, claim, (pilot or {}).get(claim.id))
        if plan.sequential is not None:
            design = (
                f"sequential, {plan.sequential.spending}, looks at {list(power.looks)} {power.unit}s, "
                f"alpha {power.alpha:.3g} per claim"
            )
            replicates = {a.id: len(unit_replicates(a, power.looks[-1])) for a in arms}
        else:
            design = f"fixed, alpha {power.alpha:.3g} per claim at the most"
            replicates = {a.id: len(a.replicates) for a in arms}
        wall = None
        if trial_seconds is not None and all(a.id in trial_seconds for a in arms):
            wall = sum(trial_seconds[a.id] * (a.tune_trials + replicates[a.id]) for a in arms)
        costs.append(ClaimCost(claim.id, tuple(a.id for a in arms), sum(a.tune_trials for a in arms), design, wall, power))
    return costs


def _claim_arm_list(plan: Plan, claim: Claim) -> list[Arm]:
    return list({a.id: a for arm, partners in claim_arms(plan.arms, claim) for a in (arm, *partners)}.values())


@dataclass(frozen=True)
class PilotSd:
    """The sd of a claim's unit-level paired differences in a pilot, and where it comes from;
    `difference` their mean (None for a declared pilot_sd), what a direction-only claim is sized on."""

    sd: float
    source: str
    difference: float | None = None


def claim_power(plan: Plan, claim: Claim, pilot: PilotSd | None = None) -> ClaimPower:
    """The claim's power at the design's most units (`ClaimPower`), from its `pilot_sd`, else `pilot`.

    Its alpha is the plan's over the verdict rows the claims will have, one per setting they cover
    (alpha / m, as `analysis.verdicts` sizes them); its units are the design's max_seeds, or without one the
    fewest units of its arms (partitions of partitioned arms, else seeds: `plan.units.arm_units`).
    """
    arms = _claim_arm_list(plan, claim)
    unit = "partition" if any(partitioned(a) for a in arms) else "seed"
    units = plan.sequential.max_seeds if plan.sequential is not None else min((len(arm_units(a)) for a in arms), default=0)
    alpha = plan.analysis.alpha / max(1, sum(len(claim_arms(plan.arms, c)) for c in plan.claims))
    if claim.pilot_sd is not None:
        pilot = PilotSd(claim.pilot_sd, "the claim's pilot_sd")
    target = claim.margin if claim.kind == "equivalent" else claim.effect
    power = needed = math.nan
    difference = pilot.difference if pilot is not None and target is None else None
    size = target if target is not None else difference
    if pilot is not None and size is not None:
        if claim.kind == "equivalent":
            power, needed = equivalence_power(size, pilot.sd, units, alpha), equivalence_units(size, pilot.sd, alpha)
        else:
            power, needed = design_power(size, pilot.sd, units, alpha), units_for_power(size, pilot.sd, alpha)
    looks, simulated = _sequential_power(plan, claim, size, None if pilot is None else pilot.sd, alpha)
    return ClaimPower(
        claim.id, claim.kind, target, None if pilot is None else pilot.sd, "" if pilot is None else pilot.source,
        units, unit, alpha, power, needed, difference, looks, *simulated,
    )


def _sequential_power(
    plan: Plan, claim: Claim, size: float | None, sd: float | None, alpha: float
) -> tuple[tuple[int, ...], tuple[float, float]]:
    """The plan's looks and, where the size and sd are known, the sequential design's simulated
    power and expected units at stopping (`ClaimPower`); NaNs where not."""
    if plan.sequential is None:
        return (), (math.nan, math.nan)
    looks = look_schedule(plan.sequential.max_seeds, plan.sequential.look_every)
    if size is None or sd is None or not (sd > 0 and size != 0):
        return looks, (math.nan, math.nan)
    design = boundaries(looks, looks[-1], alpha, plan.sequential.spending)
    if claim.kind == "equivalent":
        characteristics = operating_characteristics(0.0, sd, VerdictRule(margin=abs(size)), design)
    else:
        characteristics = operating_characteristics(size, sd, VerdictRule(side=1 if size > 0 else -1), design)
    return looks, (characteristics.for_paper, characteristics.expected_pairs)


def undecidable_claims(plan: Plan, pilot: dict[str, PilotSd] | None = None) -> list[ClaimPower]:
    """The claims with arms that `claim_power` finds undecidable at this budget, in plan order."""
    powers = [claim_power(plan, claim, (pilot or {}).get(claim.id)) for claim in plan.claims if _claim_arm_list(plan, claim)]
    return [power for power in powers if power.undecidable]


def pilot_sds(plan: Plan, source: Path) -> dict[str, PilotSd]:
    """`runs_sds` of `source`'s replicate runs (`pilot_runs`)."""
    return runs_sds(plan, *pilot_runs(plan, source))


def runs_sds(plan: Plan, frame: pl.DataFrame, where: str) -> dict[str, PilotSd]:
    """Per claim of `plan`, the sd and mean of its unit-level paired differences in the completed
    replicates of `frame` (read at `where`), paired and averaged within partition as the verdicts pair
    them (`analysis.verdicts`, on the plan's claims, split and design). A claim covering several
    settings gets their pooled sd and the mean over all their units; a claim with fewer than 2
    units there gets none."""
    import numpy as np
    import polars as pl

    # lazy: polars, which plan needs only with a pilot
    from nerplat.analysis.compare import setting_axes
    from nerplat.analysis.report import settings_from_plan
    from nerplat.analysis.verdicts import claim_sides

    usable = frame.filter(pl.col("status") == "completed")
    settings = settings_from_plan(plan.model_dump(mode="json"), "plan")
    axes = setting_axes(usable) if not usable.is_empty() else []
    found = {}
    for claim in settings.claims:
        sides = [side for side in claim_sides(usable, claim, settings, axes) if side.a.size >= 2]
        if not sides:
            continue
        differences = [side.a - side.b for side in sides]
        freedom = sum(d.size - 1 for d in differences)
        pooled = math.sqrt(sum(float(np.var(d, ddof=1)) * (d.size - 1) for d in differences) / freedom)
        units = f"{sum(d.size for d in differences)} {'/'.join(sorted({side.unit for side in sides}))}s"
        mean = float(np.mean(np.concatenate(differences)))
        found[claim.id] = PilotSd(pooled, f"{where}, {units}" + (f" in {len(sides)} settings" if len(sides) > 1 else ""), mean)
    return found


def pilot_runs(plan: Plan, source: Path) -> tuple[pl.DataFrame, str]:
    """The replicate runs of a pilot and where they were read: a report folder's runs.parquet, or
    the plan's experiment in an MLflow SQLite store (a run's work folder holding mlflow.db, or the
    .db file), so an earlier run of the same spec serves without an analysis in between."""
    import polars as pl

    from nerplat.analysis.run_frames import fetch_replicates  # lazy: polars, which plan needs only with a pilot

    if (source / "runs.parquet").is_file():
        return pl.read_parquet(source / "runs.parquet"), str(source / "runs.parquet")
    store = source / "mlflow.db" if source.is_dir() else source
    if store.suffix != ".db" or not store.is_file():
        raise UserInputError(Problem(
            f"{source} holds neither runs.parquet nor mlflow.db: give a report folder (docs/results/NAME, reports/NAME), "
            "a run's work folder or its MLflow SQLite store (.db)", path="--pilot"))
    uri = f"sqlite:///{store.resolve()}"
    return fetch_replicates(open_client(uri), plan.experiment), f"{uri}, experiment {plan.experiment}"
