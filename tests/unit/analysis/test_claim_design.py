"""Before a run: claims whose arms get unequal tuning effort, and each claim's pairs and cost under the design."""

from __future__ import annotations

import pytest
from spec_testing import fake_catalog

from nerplat.analysis.claim_design import claim_costs, unequal_effort
from nerplat.plan.compiler import compile_plan

SPEC = """
experiment: fair
dataset: conll2003
model: {encoder: tiny}
train: {epochs: 4, lr: {loguniform: [1.0e-5, 1.0e-3]}}
methods:
  ce: {loss: ce}
  focal: {loss: focal, gamma: {uniform: [0.0, 5.0]}}
  mom: {loss: mom, lambda: {uniform: [0.0, 1.0]}}
tune: {num_samples: 6}
replicate: {sequential: {max_seeds: 9, look_every: 3, spending: pocock}}
claims:
  - {id: mom_vs_ce, paper: x, method: mom, partner: ce, metric: micro_f1, effect: 0.01}
  - {id: mom_vs_best, paper: x, method: mom, partner: best_other, metric: micro_f1, effect: 0.01}
"""


@pytest.fixture
def plan_of(tmp_path):
    def compiled(text: str):
        path = tmp_path / "spec.yaml"
        path.write_text(text, encoding="utf-8")
        return compile_plan(path, fake_catalog())

    return compiled


def test_equal_effort_passes_and_a_fixed_learning_rate_or_shorter_budget_is_named(plan_of):
    assert unequal_effort(plan_of(SPEC)) == []
    unfair = SPEC.replace("  ce: {loss: ce}", "  ce: {loss: ce, train: {lr: 1.0e-4, epochs: 2}}")
    lines = unequal_effort(plan_of(unfair))
    assert len(lines) == 2 and all("ce (0 trials, searching no training key, 2 epochs)" in line for line in lines)
    assert lines[0].startswith("claim mom_vs_ce: unequal tuning effort, mom (6 trials, searching train.lr, 4 epochs)")
    excused = unfair.replace("effect: 0.01}", "effect: 0.01, unequal_effort: the paper tunes MoM only}")
    assert unequal_effort(plan_of(excused)) == []


def test_each_claim_gets_its_design_and_expected_pairs_and_a_cost_from_measured_trials(plan_of):
    plan = plan_of(SPEC)
    against_ce, against_best = claim_costs(plan)
    assert against_ce.arms == ("conll2003/full/mom", "conll2003/full/ce") and against_ce.tune_trials == 12
    assert len(against_best.arms) == 3 and against_best.max_pairs == 9 and "looks at [3, 6, 9]" in against_ce.design
    sequential, fixed = against_ce.expected_pairs[1.0]
    assert 3 <= sequential <= 9 and fixed >= 3
    seconds = {arm.id: 60.0 for arm in plan.arms}
    (costed, _) = claim_costs(plan, seconds)
    assert costed.wall_s == pytest.approx(60.0 * 2 * (6 + costed.expected_pairs[1.0][0]))
    assert "h of its arms' trials" in costed.line() and against_ce.wall_s is None
