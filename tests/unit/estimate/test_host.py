"""What a trial of an arm does, counted on its data before it runs."""

from pathlib import Path

import pytest

from nerplat.catalog import default_catalog
from nerplat.estimate.host import epoch_work_on_data
from nerplat.plan.compiler import compile_plan

REPO = Path(__file__).parents[3]


@pytest.mark.parametrize(("spec", "objective", "passes"), [("ova_auc_lowres", "ova_auc", 3), ("auc2t_lowres_conll", "comauc_2t", 2), ("ova_auc_lowres", "ce", 1)])
def test_the_passes_a_batch_takes_come_from_the_objectives_config_on_the_arms_labels(spec, objective, passes):
    plan = compile_plan(REPO / "specs" / f"{spec}.yaml", default_catalog(), profile="cpu")
    arm = next(arm for arm in plan.arms if arm.objective == objective)
    work_of = epoch_work_on_data(arm)
    assert work_of.passes == passes and work_of.tokens > 0


def test_the_work_counts_the_dev_subset_and_the_test_split_an_evaluation_scores():
    plan = compile_plan(REPO / "specs" / "entity_ratio.yaml", default_catalog(), profile="cpu")
    work = epoch_work_on_data(plan.arms[0])
    assert work.dev_sentences == 300 and work.test_sentences == 3453  # train.dev_subset; CoNLL-2003's test split
