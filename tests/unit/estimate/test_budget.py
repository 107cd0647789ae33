"""`--budget`: the duration it takes, and the mildest cut of each kind that brings a prediction under it,
found by compiling the spec again with the cut and predicting that plan."""

from pathlib import Path

import pytest

from nerplat.catalog import default_catalog
from nerplat.errors import UserInputError
from nerplat.estimate.budget import advise, fitting_cuts, parse_budget
from nerplat.estimate.cost import EpochWork, Machine, MeasuredRun, predict_cost
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource
from nerplat.run.looks import replicates_by_look

ENTITY_RATIO = Path(__file__).parents[3] / "specs" / "entity_ratio.yaml"
MACHINE = Machine(cpus=2, gpus=0, label_of=lambda arm: "cpu: Test CPU x1 threads", precision_of=lambda arm: "fp32")
TRAIN_S = {"ce": 8.0, "auc_2t": 12.0, "comauc_2t": 16.0}  # each run's training seconds over 4 epochs: 2, 3 and 4 s an epoch


@pytest.mark.parametrize(("text", "seconds"), [("150m", 9000), ("2h", 7200), ("5400s", 5400), ("90min", 5400), ("1.5h", 5400)])
def test_a_budget_is_a_duration_with_its_unit(text, seconds):
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["150", "2 days", "m", ""])
def test_a_budget_without_a_unit_is_refused_with_the_forms_it_takes(text):
    with pytest.raises(UserInputError, match="--budget takes a duration with its unit"):
        parse_budget(text)


def replan(profile: str | None = "cpu"):
    """entity_ratio compiled again with `overrides`, its cap held at 20 epochs (the figures below), whatever the spec's."""
    return lambda overrides: compile_plan(
        SpecSource(ENTITY_RATIO, profile, overrides=["train.epochs=20", *overrides]), default_catalog()
    )


def predict(plan) -> float | None:
    """Each arm's runs of its objective on the test machine, no time outside training steps."""
    runs = [
        MeasuredRun(arm="earlier", objective=objective, encoder="minilm-l6", device="cpu: Test CPU x1 threads", precision="fp32",
                    epochs=4, train_tokens=4000.0, train_s=train_s, wall_s=train_s)
        for objective, train_s in TRAIN_S.items()
    ]  # fmt: skip
    return predict_cost(plan, runs, MACHINE, lambda arm: EpochWork(1000.0, 1), replicates_by_look(plan)).wall_s


def test_the_cuts_are_the_largest_units_and_epoch_cap_that_fit():
    """entity_ratio's cpu profile: 3 arms of 1-CPU runs, 20 epochs (40, 60 and 80 s), looks at 3, 6 and 9 seeds,
    each look 300 s on 2 CPUs (test_cost): 900 s in all, 45 s an epoch of the cap."""
    plan = replan()(())
    assert predict(plan) == pytest.approx(900.0)
    cuts = fitting_cuts(plan, 600.0, replan(), predict)
    units, epochs = cuts
    # 8 units add a look of 2 seeds an arm (180 s), 7 of 1 (120 s): only 6 units (2 looks) fit
    assert units.what == "at most 6 units (max_seeds, now 9)" and units.wall_s == pytest.approx(600.0)
    assert "replicate.sequential.max_seeds=6" in units.overrides
    assert epochs.what == "an epoch cap of 13 (now 20)" and epochs.overrides == ("train.epochs=13",)
    assert epochs.wall_s == pytest.approx(13 * 45)
    assert "--set train.epochs=13" in epochs.line() and "9.8 min" in epochs.line()


def test_advice_says_the_prediction_fits_or_which_cuts_would_and_asks_for_none_when_it_fits():
    plan = replan()(())
    fits = advise(plan, 900.0, 1000.0, lambda overrides: pytest.fail("no cut is sought when the prediction fits"), predict)
    assert fits.fits and fits.cuts == [] and fits.lines() == ["budget 16.7 min: the predicted 15.0 min fits"]
    over = advise(plan, 900.0, 600.0, replan(), predict)
    assert over.fits is False and len(over.cuts) == 2
    assert over.lines()[0] == "budget 10.0 min: the predicted 15.0 min exceeds it; any one of these cuts would fit:"
    assert over.as_dict()["cuts"][1]["overrides"] == ("train.epochs=13",) and over.as_dict()["fits"] is False
    nothing = advise(plan, 900.0, 1.0, replan(), predict)
    assert nothing.cuts == [] and "no single cut tried" in nothing.lines()[0]
    assert advise(plan, None, 600.0, replan(), predict).lines() == [
        "budget 10.0 min: no prediction to hold against it (an arm has none)"
    ]


def with_crf(overrides=()):
    """The cpu profile with CRF back: CRF is in no claim."""
    return replan()(("methods.crf={loss: crf}", *overrides))


def test_arms_in_no_claim_are_a_cut_when_the_spec_accepts_them_dropped():
    plan = with_crf()
    assert [arm.method for arm in plan.arms] == ["ce", "auc_2t", "comauc_2t", "crf"]
    without = predict(with_crf(("methods.crf=null",)))  # CRF trains as CE does here (the runs of every objective)
    assert without < predict(plan)
    cuts = fitting_cuts(plan, without, with_crf, predict)
    assert cuts[-1].what == "the arms in no claim dropped (crf)" and cuts[-1].overrides == ("methods.crf=null",)
    assert cuts[-1].wall_s == pytest.approx(without)
