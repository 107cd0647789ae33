"""Which arms' runs a changed spec alters, from the plan.json an experiment was started with."""

from __future__ import annotations

from nerplat.run.spec_change import arm_fingerprint, spec_change

CE, MOM = "conll2003/low_resource-40/ce", "conll2003/low_resource-40/mom"


def started(plan) -> dict:
    return plan.model_dump(mode="json")


def test_a_change_outside_the_arms_changes_no_arm(tiny_plan, tiny_plan_with):
    plan = tiny_plan_with("description=another", "analysis.alpha=0.01")
    assert plan.spec_sha256 != tiny_plan.spec_sha256
    change = spec_change(tiny_plan.spec_sha256, started(tiny_plan), plan)
    assert change.rerun == () and change.describe() == ""


def test_a_methods_own_train_setting_changes_that_arm_only(tiny_plan, tiny_plan_with):
    change = spec_change(tiny_plan.spec_sha256, started(tiny_plan), tiny_plan_with("methods.ce.train={epochs: 3}"))
    assert change.changed == (CE,) and change.removed == ()
    assert change.describe() == f"changed: {CE}"


def test_tune_settings_change_the_tuned_arms_only(tiny_plan, tiny_plan_with):
    change = spec_change(tiny_plan.spec_sha256, started(tiny_plan), tiny_plan_with("tune.num_samples=4"))
    assert change.changed == (MOM,)


def test_shared_train_settings_change_every_arm(tiny_plan, tiny_plan_with):
    assert spec_change("", started(tiny_plan), tiny_plan_with("train.lr=0.002")).changed == (CE, MOM)


def test_added_replicates_keep_every_arms_runs_and_fewer_change_them(tiny_plan_with):
    """Raising the seeds (also under a sequential design, whose max_seeds counts partitions: three, its
    first look's fewest) continues the experiment; fewer seeds would leave finished replicates the plan
    no longer has."""
    two, three = tiny_plan_with("replicate.seeds=2"), tiny_plan_with("replicate.seeds=3")
    assert spec_change("", started(two), three).rerun == ()
    partitioned = "samplers=[{low_resource: {size: 40, partitions: 3}}]"
    sequential = tiny_plan_with(partitioned, "replicate={seeds: 3, sequential: {max_seeds: 3, look_every: 1}}")
    assert spec_change("", started(tiny_plan_with(partitioned, "replicate.seeds=2")), sequential).rerun == ()
    assert spec_change("", started(three), two).changed == (CE, MOM)


def test_an_arm_the_spec_no_longer_has_is_removed_and_a_new_one_is_no_rerun(tiny_plan, tiny_plan_with):
    renamed = "methods={ce: {loss: ce}, mom2: {loss: mom, lambda: {uniform: [0.0, 1.0]}}}"
    change = spec_change(tiny_plan.spec_sha256, started(tiny_plan), tiny_plan_with(renamed))
    assert change.changed == () and change.removed == (MOM,) and change.rerun == (MOM,)
    assert change.describe() == f"removed: {MOM}"


def test_an_arm_is_named_by_its_label_only_in_run_names(tiny_plan):
    earlier = started(tiny_plan)
    arm = earlier["arms"][0]
    assert arm_fingerprint(earlier, {**arm, "label": "renamed"}) == arm_fingerprint(earlier, arm)
    assert arm_fingerprint(earlier, {**arm, "fixed": {}}) != arm_fingerprint(earlier, arm)


def test_a_plan_from_before_tune_seed_and_enqueue_resumes_unchanged(tiny_plan):
    earlier = started(tiny_plan)
    earlier["tune"] = {key: value for key, value in earlier["tune"].items() if key not in ("seed", "enqueue")}
    assert spec_change("", earlier, tiny_plan).rerun == ()


def test_starting_points_and_the_searcher_seed_change_the_tuned_arms_they_reach(tiny_plan, tiny_plan_with):
    assert spec_change("", started(tiny_plan), tiny_plan_with("tune.enqueue={mom: [{lambda: 0.175}]}")).changed == (MOM,)
    assert spec_change("", started(tiny_plan), tiny_plan_with("tune.seed=1")).changed == (MOM,)


def test_a_plan_from_before_a_field_with_a_null_default_resumes_unchanged(tiny_plan, tiny_plan_with):
    """A later version's new field at its null default (train.eval_precision was one) changes no arm;
    giving it a value does."""
    earlier = started(tiny_plan)
    for arm in earlier["arms"]:
        del arm["fixed"]["train"]["eval_precision"]
    assert spec_change("", earlier, tiny_plan).rerun == ()
    assert spec_change("", earlier, tiny_plan_with("train.eval_precision=bf16")).changed != ()
