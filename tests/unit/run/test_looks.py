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


def test_looks_run_new_partitions_before_new_seeds_and_count_units():
    looks = ReplicateLooks(Sequential(max_seeds=8, look_every=3))
    assert looks.unit_counts() == (3, 6, 8) and looks.looks() == 3
    partitioned = _Arm("ce", partitions=10, seeds=2)
    first = looks.replicates(partitioned, 0)
    assert {(r.partition, r.seed) for r in first} == {(p, s) for p in range(3) for s in range(2)}  # every seed of partitions 0-2
    assert {r.partition for r in looks.replicates(partitioned, 1)} == set(range(6))
    assert {r.partition for r in looks.replicates(partitioned, 99)} == set(range(8))  # max_seeds units, not all 10 partitions
    seeded = _Arm("ce", partitions=1)
    assert [r.seed for r in looks.replicates(seeded, 0)] == [0, 1, 2] and len(looks.replicates(seeded, 99)) == 8


def test_a_narrowed_partition_list_is_taken_in_its_own_order():
    arm = _Arm("ce", partitions=10, seeds=1)
    arm.replicates = tuple(Replicate(seed=0, partition=p) for p in (4, 7, 9, 2))
    looks = ReplicateLooks(Sequential(max_seeds=4, look_every=3))
    assert [r.partition for r in looks.replicates(arm, 0)] == [4, 7, 9]


def _claim(claim_id: str, method: str, partner: str) -> Claim:
    return Claim(id=claim_id, paper="x", source="Table 1", method=method, partner=partner, metric="micro_f1", effect=0.01)


def test_undecided_claims_keep_their_arms_and_best_other_keeps_the_setting():
    arms = [_Arm(m) for m in ("ce", "focal", "mom", "wce")]
    claims = [_claim("a", "mom", "ce"), _claim("b", "mom", "best_other")]
    claimed = claimed_arms(arms, claims)
    assert {claim: sorted(ids) for claim, ids in claimed.items()} == {
        "a": ["conll2003/full/ce", "conll2003/full/mom"], "b": sorted(a.id for a in arms)
    }
    rows = pl.DataFrame(
        {"claim": ["a", "b"], "decided_look": [0, None],
         "arms": [["conll2003/full/ce", "conll2003/full/mom"], ["conll2003/full/focal", "conll2003/full/mom"]]},
        schema={"claim": pl.String, "decided_look": pl.Int64, "arms": pl.List(pl.String)},
    )
    assert needed_arms(rows, claimed) == {"conll2003/full/focal", "conll2003/full/mom"}
    nothing_yet = rows.clear()
    assert needed_arms(nothing_yet, claimed) == {a.id for a in arms}  # no pairs finished: every claimed arm


def test_arms_whose_only_claims_are_undecidable_stop_after_the_first_look():
    arms = [_Arm(m) for m in ("ce", "focal", "mom")]
    ce, focal, mom = (a.id for a in arms)
    claimed = claimed_arms(arms, [_claim("a", "mom", "ce"), _claim("b", "focal", "ce")])
    rows = pl.DataFrame(
        {"claim": ["a", "b"], "decided_look": [None, None], "arms": [[ce, mom], [ce, focal]]},
        schema={"claim": pl.String, "decided_look": pl.Int64, "arms": pl.List(pl.String)},
    )
    assert needed_arms(rows, claimed) == {ce, focal, mom}
    assert needed_arms(rows, claimed, undecidable={"a"}) == {ce, focal}  # ce goes on for claim b, mom stops
    assert needed_arms(rows.clear(), claimed, undecidable={"a", "b"}) == set()


def test_each_look_adds_the_claimed_arms_next_seeds_and_arms_in_no_claim_run_the_first_look_only():
    from types import SimpleNamespace

    arms = [_Arm(m, partitions=10, seeds=2) for m in ("ce", "mom", "wce")]
    plan = SimpleNamespace(arms=arms, claims=[_claim("a", "mom", "ce")], sequential=Sequential(max_seeds=8, look_every=3))
    ce, mom, wce = (arm.id for arm in arms)
    # 2 seeds a partition: looks at 3, 6 and 8 partitions add 6, 6 and 4 replicates of each claimed arm
    assert replicates_by_look(plan) == [{ce: 6, mom: 6, wce: 6}, {ce: 6, mom: 6}, {ce: 4, mom: 4}]
    assert replicates_by_look(plan, undecidable={"a"}) == [{ce: 6, mom: 6, wce: 6}]
    fixed = SimpleNamespace(arms=arms, claims=plan.claims, sequential=None)
    assert replicates_by_look(fixed) == [{ce: 20, mom: 20, wce: 20}]


def test_a_compiled_partitioned_design_adds_look_every_partitions_of_one_seed_a_look(tmp_path):
    from nerplat.catalog import default_catalog
    from nerplat.plan.compiler import compile_plan

    spec = tmp_path / "s.yaml"
    spec.write_text(
        "experiment: t\ndataset: conll2003\nsamplers: [{low_resource: {size: 20, partitions: 9}}]\n"
        "methods:\n  ce: {loss: ce}\n  mom: {loss: mom, lambda: 0.2}\n"
        "replicate: {seeds: 1, sequential: {max_seeds: 9, look_every: 3}}\n"
        "claims:\n  - {id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: micro_f1, effect: 0.01}\n"
    )
    plan = compile_plan(spec, default_catalog())
    ce, mom = (arm.id for arm in plan.arms)
    assert replicates_by_look(plan) == [{ce: 3, mom: 3}] * 3  # 9 units, not 9 seeds of each of 9 partitions
