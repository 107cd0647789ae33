"""Replicate until decided: which replicates each look of a sequential design runs, and which arms go on.

With `replicate.sequential` the plan holds every replicate up to max_seeds, but they run in looks
of units (`analysis.verdicts.claim_looks`): the unit is the partition for a partitioned arm (more
than one partition: the papers replicate over partitions, and seeds within a partition are not
independent), else the seed. Look k runs, of the arms still needed, the replicates of the first
n_k units: for a partitioned arm every seed of its first n_k partitions, for the others the
first n_k seeds. Then the claims are judged on what has finished (`analysis.verdicts`, the
claim's repeated interval at that look). An arm is needed at the next look while some claim it
takes part in is undecided and could be decided: its method and partner (`claimed_arms`; every
arm of the setting for a `best_other` claim until its partner is known). A claim the plan marks
undecidable at this budget (`analysis.claim_design.undecidable_claims`) keeps no arm beyond the
first look unless the run is asked to (`nerplat run --replicate-undecidable`). Arms in no claim
run the first look only. A resume recomputes the same looks from the finished runs (the
decisions are deterministic), so it continues the design where it stopped.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nerplat.config.experiment import Sequential
from nerplat.plan.model import Arm, Plan, Replicate
from nerplat.plan.units import unit_replicates

if TYPE_CHECKING:  # polars is imported where the verdicts are read: importing the runner sets no allocator variable
    import polars as pl


@dataclass(frozen=True)
class ReplicateLooks:
    """The looks of a sequential design, in units (partitions of a partitioned arm, else seeds)."""

    sequential: Sequential

    def unit_counts(self) -> tuple[int, ...]:
        """Units run by each look: the claims' looks (`analysis.verdicts.claim_looks`)."""
        from nerplat.analysis.verdicts import claim_looks  # lazy: polars, which --help does not need

        return claim_looks(self.sequential)

    def replicates(self, arm: Arm, look: int) -> tuple[Replicate, ...]:
        """The arm's replicates up to look `look` (0-based; past the last look: all of them): every
        seed of its first n partitions (partition indices below n, unless `replicate.partitions`
        picked others), else its first n seeds (`plan.units.unit_replicates`)."""
        counts = self.unit_counts()
        return unit_replicates(arm, counts[min(look, len(counts) - 1)])

    def looks(self) -> int:
        return len(self.unit_counts())


def needed_arms(verdicts: "pl.DataFrame", claimed: dict[str, list[str]], undecidable: Collection[str] = ()) -> set[str]:
    """Arms some undecided claim still reads: the `arms` of each row without a `decided_look`, and
    for a claim with no row yet (no pairs finished) the arms `claimed` lists for it. Claims in
    `undecidable` (at this budget, by the plan's pilot sds) keep no arm."""
    needed: set[str] = set()
    for row in verdicts.iter_rows(named=True):
        if row["decided_look"] is None and row["claim"] not in undecidable:
            needed.update(row["arms"] or [])
    seen = set(verdicts["claim"].to_list()) if not verdicts.is_empty() else set()
    for claim, arms in claimed.items():
        if claim not in seen and claim not in undecidable:
            needed.update(arms)
    return needed


def claimed_arms(plan_arms: Iterable[Arm], claims: Iterable[Any]) -> dict[str, list[str]]:
    """Per claim id, the arms it may read: the method's and partner's in the matching settings
    (every arm of those settings for `best_other`)."""
    from nerplat.analysis.claim_design import claim_arms  # lazy: numpy (claim power), which --help does not need

    arms = list(plan_arms)
    return {
        claim.id: list(dict.fromkeys(a.id for arm, partners in claim_arms(arms, claim) for a in (arm, *partners)))
        for claim in claims
    }


def replicates_by_look(plan: Plan, undecidable: Collection[str] = ()) -> list[dict[str, int]]:
    """Per look, the replicates each arm adds when no claim is decided before the last look (the
    longest the design runs; arms in no claim, or only in `undecidable` ones, run the first look
    only); one look of every replicate without a sequential design. `estimate.cost` spreads each
    look's runs over the machine."""
    if plan.sequential is None:
        return [{arm.id: len(arm.replicates) for arm in plan.arms}]
    looks = ReplicateLooks(plan.sequential)
    claims = [claim for claim in plan.claims if claim.id not in undecidable]
    claimed = {arm_id for arms in claimed_arms(plan.arms, claims).values() for arm_id in arms}
    ran = dict.fromkeys((arm.id for arm in plan.arms), 0)  # replicates up to the previous look
    added = []
    for look in range(looks.looks()):
        runs = {}
        for arm in plan.arms:
            if look == 0 or arm.id in claimed:
                total = len(looks.replicates(arm, look))
                runs[arm.id], ran[arm.id] = total - ran[arm.id], total
        adds = {arm_id: count for arm_id, count in runs.items() if count}
        if adds:  # a look no arm runs is not taken
            added.append(adds)
    return added
