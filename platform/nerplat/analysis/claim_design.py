"""What a plan promises its claims before anything runs: equal tuning effort, and pairs and cost under the design.

A comparison is only as fair as the effort each side got: the same tune trials, the same searched
training keys (the learning rate above all) and the same epochs. `unequal_effort` lists every claim
whose arms differ (a method's own hyper-parameters, such as MoM's lambda, are what it is, not
effort); `nerplat validate` and `nerplat plan` print them, unless the claim's `unequal_effort` says why. `claim_costs` gives, per claim, the pairs
the replication design is expected to use and, where earlier runs measured the throughput
(`plan.cost`), the wall time of its arms' trials.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from nerplat.config.experiment import BEST_OTHER, Claim
from nerplat.plan.model import Arm, Plan

STANDARDISED_EFFECTS = (1.0, 0.5)  # paper effect / sd of the paired differences, at which expected pairs are shown


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
class ClaimCost:
    """A claim's arms and what the design is expected to spend on it."""

    claim: str
    arms: tuple[str, ...]
    tune_trials: int
    max_pairs: int
    design: str
    expected_pairs: dict[float, tuple[float, float]]  # standardised effect -> (sequential expected pairs, fixed pairs of equal power)
    wall_s: float | None  # its arms' trials at the expected pairs of the first effect, from measured throughput

    def line(self) -> str:
        parts = [f"claim {self.claim}: {len(self.arms)} arms, {self.tune_trials} tune trials, at most {self.max_pairs} pairs ({self.design})"]
        for effect, (sequential, fixed) in self.expected_pairs.items():
            if math.isfinite(sequential):
                parts.append(f"expected {sequential:.1f} pairs if the paper's effect is {effect:g} sd (a fixed design of equal power: {fixed:.0f})")
        if self.wall_s is not None:
            parts.append(f"about {self.wall_s / 3600:.1f} h of its arms' trials")
        return "; ".join(parts)


def claim_costs(plan: Plan, trial_seconds: dict[str, float] | None = None) -> list[ClaimCost]:
    """Per claim: arms, tune trials, the design's pairs and, with `trial_seconds` (arm id -> predicted
    seconds of one run, from `plan.cost`), the wall time of its arms' trials one at a time."""
    from nerplat.analysis.sequential import boundaries, expected_pairs
    from nerplat.analysis.verdicts import claim_looks
    from nerplat.analysis.stats import pairs_needed

    costs = []
    for claim in plan.claims:
        covered = claim_arms(plan.arms, claim)
        arms = list({a.id: a for arm, partners in covered for a in (arm, *partners)}.values())
        if not arms:
            continue
        partitions = len(arms[0].partitions)
        family = max(1, len(plan.claims))
        alpha = plan.analysis.alpha / family
        expected: dict[float, tuple[float, float]] = {}
        if plan.sequential is not None:
            looks = claim_looks(plan.sequential, partitions)
            max_pairs = looks[-1]
            design = boundaries(looks, max_pairs, alpha, plan.sequential.spending)
            for effect in STANDARDISED_EFFECTS:
                found = expected_pairs(effect, 1.0, design, simulations=2000)
                expected[effect] = (found.sequential, found.fixed)
            text = f"sequential, {plan.sequential.spending}, looks at {list(looks)} pairs, alpha {alpha:.3g} per claim"
        else:
            max_pairs = len(arms[0].replicates)
            for effect in STANDARDISED_EFFECTS:
                expected[effect] = (float(max_pairs), pairs_needed(effect, 1.0, alpha))
            text = f"fixed, alpha {alpha:.3g} per claim at the most"
        wall = None
        if trial_seconds is not None and all(a.id in trial_seconds for a in arms):
            pairs = expected[STANDARDISED_EFFECTS[0]][0]
            runs = {a.id: a.tune_trials + (pairs if math.isfinite(pairs) else len(a.replicates)) for a in arms}
            wall = sum(trial_seconds[a] * n for a, n in runs.items())
        costs.append(ClaimCost(claim.id, tuple(a.id for a in arms), sum(a.tune_trials for a in arms), max_pairs, text, expected, wall))
    return costs
