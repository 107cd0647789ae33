"""Which replicates each look of a sequential design runs, and which arms a look keeps."""

from __future__ import annotations

import polars as pl

from nerplat.config.experiment import Claim, Sequential
from nerplat.plan.model import Replicate
from nerplat.run.looks import ReplicateLooks, claimed_arms, needed_arms, replicates_by_look


class _Arm:
    """The parts of a plan Arm the looks read."""

    def __init__(self, method: str, partitions: int = 1, sampler: str = "full", seeds: int = 8):
        self.id, self.method, self.dataset, self.sampler = f"conll2003/{sampler}/{method}", method, "conll2003", sampler
        self.partitions = tuple(range(partitions))
        self.replicates = tuple(Replicate(seed=s, partition=p) for p in self.partitions for s in range(seeds))


def test_looks_run_a_prefix_of_the_seeds_over_every_partition():
    looks = ReplicateLooks(Sequential(max_seeds=8, look_every=3), tuple(range(8)))
    assert looks.seed_counts(1) == (3, 6, 8)
    assert looks.seed_counts(3) == (3, 6, 8)  # looks every 3 seeds, whatever the partitions
    every_seed = ReplicateLooks(Sequential(max_seeds=8, look_every=1), tuple(range(8)))
    assert every_seed.seed_counts(1) == (3, 4, 5, 6, 7, 8)  # the first look needs 3 pairs
    assert every_seed.seed_counts(3) == (1, 2, 3, 4, 5, 6, 7, 8)  # 3 partitions: one seed gives 3 pairs
    arm = _Arm("ce", partitions=2)
    assert {(r.seed, r.partition) for r in looks.replicates(arm, 0)} == {(s, p) for s in range(3) for p in range(2)}
    assert len(looks.replicates(arm, 99)) == 16 and looks.looks([_Arm("ce"), arm]) == 3


def _claim(claim_id: str, method: str, partner: str) -> Claim:
    return Claim(id=claim_id, paper="x", method=method, partner=partner, metric="micro_f1", effect=0.01)


def test_undecided_claims_keep_their_arms_and_best_other_keeps_the_setting():
    arms = [_Arm(m) for m in ("ce", "focal", "mom", "wce")]
    claims = [_claim("a", "mom", "ce"), _claim("b", "mom", "best_other")]
    claimed = claimed_arms(arms, claims)
    assert {claim: sorted(ids) for claim, ids in claimed.items()} == {"a": ["conll2003/full/ce", "conll2003/full/mom"], "b": sorted(a.id for a in arms)}
    rows = pl.DataFrame(
        {"claim": ["a", "b"], "decided_look": [0, None], "arms": [["conll2003/full/ce", "conll2003/full/mom"], ["conll2003/full/focal", "conll2003/full/mom"]]},
        schema={"claim": pl.String, "decided_look": pl.Int64, "arms": pl.List(pl.String)},
    )
    assert needed_arms(rows, claimed) == {"conll2003/full/focal", "conll2003/full/mom"}
    nothing_yet = rows.clear()
    assert needed_arms(nothing_yet, claimed) == {a.id for a in arms}  # no pairs finished: every claimed arm


def test_each_look_adds_the_claimed_arms_next_seeds_and_arms_in_no_claim_run_the_first_look_only():
    from types import SimpleNamespace

    arms = [_Arm(m, partitions=2) for m in ("ce", "mom", "wce")]
    plan = SimpleNamespace(arms=arms, claims=[_claim("a", "mom", "ce")], sequential=Sequential(max_seeds=8, look_every=3))
    ce, mom, wce = (arm.id for arm in arms)
    # 2 partitions: looks at 3, 6 and 8 seeds add 6, 6 and 4 replicates of each claimed arm
    assert replicates_by_look(plan) == [{ce: 6, mom: 6, wce: 6}, {ce: 6, mom: 6}, {ce: 4, mom: 4}]
    fixed = SimpleNamespace(arms=arms, claims=plan.claims, sequential=None)
    assert replicates_by_look(fixed) == [{ce: 16, mom: 16, wce: 16}]
