"""Spec -> plan: arms, search spaces, trial counts, replicates, the trial-config bridge, hashes, snapshots."""

import time
from pathlib import Path

import pytest
import yaml
from host_load import scaled

from nerplat.config.trial import Component, DatasetRef, TrialConfig
from nerplat.catalog import default_catalog
from nerplat.errors import UserInputError
from nerplat.config.experiment import TUNE_SEED
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource
from nerplat.plan.model import Plan

COMPILE = Path(__file__).parents[2] / "fixtures" / "specs" / "compile"
SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.fixture(scope="module")
def lowres(catalog):
    return compile_plan(COMPILE / "lowres_grid.yaml", catalog)


def test_arms_are_datasets_by_sampler_settings_by_methods_in_spec_order(lowres):
    assert [arm.id for arm in lowres.arms][:6] == [
        "conll2003/untyped/ce",
        "conll2003/untyped/focal",
        "conll2003/untyped/auc",
        "conll2003/untyped+low_resource-20/ce",
        "conll2003/untyped+low_resource-20/focal",
        "conll2003/untyped+low_resource-20/auc",
    ]
    assert len(lowres.arms) == 2 * 3 * 3
    assert lowres.arms[-1].id == "wnut17/untyped+low_resource-50/auc"
    assert len({arm.id for arm in lowres.arms}) == len(lowres.arms)


def test_an_arm_carries_its_fixed_trial_settings(lowres):
    arm = lowres.arm("wnut17/untyped+low_resource-50/auc")
    assert (arm.dataset, arm.sampler, arm.method, arm.objective, arm.head) == (
        "wnut17", "untyped+low_resource-50", "auc", "auc_2t", "two_task"
    )
    assert arm.sampler_description == "untyped+low_resource(size=50, partitions=4)"
    assert arm.fixed["dataset"] == {
        "name": "wnut17", "path": None, "format": {"name": "conll", "params": {}}, "iob1": "refuse", "dev_from_train": None
    }
    assert arm.fixed["samplers"] == [
        {"name": "untyped", "params": {}}, {"name": "low_resource", "params": {"size": 50, "partitions": 4}}
    ]
    assert arm.fixed["encoder"] == {"name": "tiny", "max_length": 64, "window_stride": 32}
    assert arm.fixed["head"] == {"name": "two_task", "params": {"threshold": 0.4}}
    assert arm.fixed["objective"] == {"name": "auc_2t", "params": {"lambda": 100.0}}
    assert arm.fixed["train"]["lr"] == 2e-5  # the method's own value replaces the searched one
    assert arm.search_space == {} and arm.tune_trials == 0
    assert (arm.resources.workers, arm.resources.gpus_per_worker, arm.resources.custom) == (2, 0.5, {"big_memory": 1.0})


def test_searched_values_are_left_out_of_the_fixed_settings(lowres):
    arm = lowres.arm("conll2003/untyped/focal")
    assert set(arm.search_space) == {"train.lr", "objective.gamma"}
    assert "lr" not in arm.fixed["train"] and "gamma" not in arm.fixed["objective"]["params"]


def test_grid_search_runs_every_grid_point(lowres):
    assert lowres.arm("conll2003/untyped/ce").tune_trials == 3  # lr: 3 points per axis
    assert lowres.arm("conll2003/untyped/focal").tune_trials == 3 * 3  # lr x gamma's 3 choices


def test_replicates_are_partitions_by_seeds(lowres):
    full = lowres.arm("conll2003/untyped/ce")
    assert full.partitions == (0,)
    assert [(r.partition, r.seed) for r in full.replicates] == [(0, 7), (0, 8)]
    low = lowres.arm("conll2003/untyped+low_resource-20/ce")
    assert low.partitions == (0, 1, 2, 3)
    assert [(r.partition, r.seed) for r in low.replicates] == [(0, 7), (0, 8), (1, 7), (1, 8), (2, 7), (2, 8)]


def test_plan_level_settings(lowres):
    assert (lowres.experiment, lowres.description, lowres.profile) == ("lowres_grid", "compile snapshot fixture", None)
    assert (lowres.tune.searcher, lowres.tune.scheduler) == (
        Component(name="grid", params={"points_per_axis": 3}), Component(name="asha", params={"grace_period": 1})
    )
    assert (lowres.tune.metric, lowres.replicate_split, lowres.tracking_uri) == ("dev_macro_f1", "test", "sqlite:///plan-test.db")
    assert lowres.analysis.comparisons == (("focal", "auc"),) and lowres.analysis.test == "wilcoxon"
    tune = sum(a.tune_trials for a in lowres.arms)
    assert lowres.total_trials() == tune + sum(len(a.replicates) for a in lowres.arms)


def test_trial_config_bridges_an_arm_and_sampled_values(lowres):
    arm = lowres.arm("conll2003/untyped+low_resource-20/focal")
    config = arm.trial_config({"train.lr": 3e-5, "objective.gamma": 2.0}, seed=8, partition=3, eval_split="dev")
    assert isinstance(config, TrialConfig)
    assert config.dataset == DatasetRef(name="conll2003")
    assert config.samplers[1] == Component(name="low_resource", params={"size": 20, "partitions": 4})
    assert config.objective == Component(name="focal", params={"gamma": 2.0})
    assert (config.train.lr, config.train.epochs, config.train.batch_size) == (3e-5, 3, 8)
    assert (config.seed, config.partition, config.eval_split) == (8, 3, "dev")
    assert arm.fixed["objective"]["params"] == {}  # the arm is not modified


@pytest.mark.parametrize(
    ("sampled", "partition", "paths", "message"),
    [
        ({"train.lr": 3e-5}, 0, ["objective.gamma"], "needs a value for 'objective.gamma' (choice(0.0, 2.0, 5.0))"),
        ({"train.lr": 3e-5, "objective.gamma": 2.0, "train.epochs": 4}, 0, ["train.epochs"], "'train.epochs' is not searched"),
        ({"train.lr": 1.0, "objective.gamma": 2.0}, 0, ["train.lr"], "1.0 is outside loguniform(1e-05, 0.0001)"),
        ({"train.lr": 3e-5, "objective.gamma": 1.0}, 0, ["objective.gamma"], "1.0 is outside choice(0.0, 2.0, 5.0)"),
        ({"train.lr": 3e-5, "objective.gamma": 2.0}, 4, ["partition"], "has partitions [0, 1, 2, 3], not 4"),
    ],
)
def test_trial_config_refuses_values_outside_the_arm(lowres, sampled, partition, paths, message):
    arm = lowres.arm("conll2003/untyped+low_resource-20/focal")
    with pytest.raises(UserInputError) as raised:
        arm.trial_config(sampled, seed=0, partition=partition)
    assert [p.path for p in raised.value.problems] == paths
    assert message in raised.value.problems[0].message


def test_an_unknown_arm_id_suggests_the_closest(lowres):
    with pytest.raises(UserInputError, match="unknown arm 'conll2003/untyped/focall'; did you mean 'conll2003/untyped/focal'"):
        lowres.arm("conll2003/untyped/focall")


def test_the_plan_round_trips_through_json(lowres):
    again = Plan.model_validate_json(lowres.model_dump_json())
    assert again == lowres
    assert again.sha256() == lowres.sha256()


def test_hashes_are_stable_and_follow_content_not_formatting(catalog, write_spec):
    text = (COMPILE / "tpe_profiles.yaml").read_text()
    first = compile_plan(write_spec(text, "a.yaml"), catalog)
    reformatted = compile_plan(write_spec("# a comment\n" + text.replace("{search: tpe,", "{ search: tpe ,"), "b.yaml"), catalog)
    changed = compile_plan(write_spec(text.replace("num_samples: 12", "num_samples: 13"), "c.yaml"), catalog)
    assert (first.spec_sha256, first.sha256()) == (reformatted.spec_sha256, reformatted.sha256())
    assert first.spec_sha256 != changed.spec_sha256 and first.sha256() != changed.sha256()
    assert len(first.sha256()) == 64


def test_a_profile_without_search_space_has_no_tune_phase(catalog):
    plan = compile_plan(SpecSource(COMPILE / "tpe_profiles.yaml", "cpu"), catalog)
    assert plan.profile == "cpu" and plan.tune is None and plan.replicate_split == "dev"
    assert [(a.id, a.tune_trials, len(a.replicates)) for a in plan.arms] == [
        ("conll2003/full/ce", 0, 2), ("conll2003/full/mom", 0, 2)
    ]
    assert plan.arm("conll2003/full/mom").fixed["objective"]["params"] == {"lambda": 0.175, "base": "focal"}
    tuned = compile_plan(COMPILE / "tpe_profiles.yaml", catalog)
    assert [a.tune_trials for a in tuned.arms] == [0, 12]
    assert tuned.tune.max_concurrent == 3


@pytest.mark.parametrize(("spec", "profile"), [("lowres_grid", None), ("tpe_profiles", None), ("tpe_profiles", "cpu")])
def test_compiled_plans_match_their_snapshots(catalog, match_snapshot, spec, profile):
    plan = compile_plan(SpecSource(COMPILE / f"{spec}.yaml", profile), catalog)
    name = spec + (f"--{profile}" if profile else "")
    match_snapshot(plan.model_dump(mode="json"), SNAPSHOTS / f"{name}.json")


def test_a_method_restricted_to_some_sampler_settings_gets_only_those_arms(catalog, write_spec):
    text = (
        "experiment: t\ndataset: conll2003\nsamplers: [[], [sCR], [untyped]]\n"
        "methods:\n  ce: {loss: ce}\n  focal: {loss: focal, samplers: [full, untyped]}\n"
    )
    plan = compile_plan(write_spec(text), catalog)
    assert [arm.id for arm in plan.arms] == [
        "conll2003/full/ce",
        "conll2003/full/focal",
        "conll2003/sCR/ce",
        "conll2003/untyped/ce",
        "conll2003/untyped/focal",
    ]


def test_a_trial_config_the_arm_cannot_make_names_the_field(lowres):
    arm = lowres.arms[0]
    broken = arm.model_copy(update={"fixed": {**arm.fixed, "train": {**arm.fixed["train"], "epochs": 0}}})
    with pytest.raises(UserInputError) as caught:
        broken.trial_config({key: space.grid_values(2)[0] for key, space in arm.search_space.items()})
    (problem,) = caught.value.problems
    assert problem.path == "train.epochs"
    assert problem.message == "input should be greater than or equal to 1 (got 0)"
SPECS = sorted((Path(__file__).parents[3] / "specs").glob("*.yaml"))


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_no_replicate_seed_is_a_tuning_trial_seed(spec):
    # issue 12 item 7: a replicate that repeats the chosen tuning trial is a best-of-N draw
    for profile in [None, *yaml.safe_load(spec.read_text()).get("profiles", {})]:
        for arm in compile_plan(SpecSource(spec, profile), default_catalog()).arms:
            assert TUNE_SEED not in {r.seed for r in arm.replicates}, (spec.name, profile, arm.id)


def test_a_spec_listing_the_tuning_seed_as_a_replicate_seed_is_refused(catalog, write_spec):
    text = f"experiment: t\ndataset: conll2003\nmethods:\n  ce: {{loss: ce}}\nreplicate:\n  seeds: [1, {TUNE_SEED}]\n"
    with pytest.raises(UserInputError) as raised:
        compile_plan(write_spec(text), catalog)
    (problem,) = raised.value.problems
    assert (problem.path, problem.line) == ("replicate.seeds", 6) and "tuning trials' seed" in problem.message


def test_a_steps_matched_control_is_planned_as_its_own_sampler_setting(write_spec):
    text = (
        "experiment: t\ndataset: wnut17\n"
        "samplers: [[], [scr], [{matched_steps: {to: [scr]}}]]\n"
        "methods:\n  softmax: {loss: ce}\n  focal: {loss: focal, samplers: [full]}\n"
    )
    plan = compile_plan(write_spec(text), default_catalog())
    assert [arm.id for arm in plan.arms] == [
        "wnut17/full/softmax",
        "wnut17/full/focal",
        "wnut17/scr/softmax",
        "wnut17/matched_steps-scr/softmax",
    ]
    control = plan.arm("wnut17/matched_steps-scr/softmax")
    assert control.fixed["samplers"] == [{"name": "matched_steps", "params": {"to": ["scr"]}}]
    assert control.fixed["train"] == plan.arm("wnut17/scr/softmax").fixed["train"]  # same epochs, same batches


def test_a_steps_matched_control_of_an_unknown_chain_is_refused_at_its_line(write_spec):
    text = "experiment: t\ndataset: wnut17\nsamplers:\n  - []\n  - [{matched_steps: {to: [scrr]}}]\nmethods:\n  ce: {loss: ce}\n"
    with pytest.raises(UserInputError) as raised:
        compile_plan(write_spec(text), default_catalog())
    (problem,) = raised.value.problems
    assert problem.line == 5 and "unknown sampler 'scrr'; did you mean 'scr'" in problem.message


def test_a_method_with_its_own_encoder_keeps_it_over_model_encoder(write_spec):
    text = (
        "experiment: t\ndataset: conll2003\nmodel: {encoder: tiny, max_length: 64}\n"
        "methods:\n  bert: {loss: ce}\n  shallow: {loss: ce, encoder: word2vec-50}\n"
        "  feature_crf: {loss: crf, encoder: word2vec-50, head: crfsuite}\n"
    )
    plan = compile_plan(write_spec(text), default_catalog())
    encoders = {arm.method: arm.fixed["encoder"] for arm in plan.arms}
    assert encoders["bert"] == {"name": "tiny", "max_length": 64, "window_stride": 32}
    assert encoders["shallow"] == encoders["feature_crf"] == {"name": "word2vec-50", "max_length": 64, "window_stride": 32}
    assert plan.arm("conll2003/full/feature_crf").head == "crfsuite"


def test_an_unknown_method_encoder_is_reported_at_its_line(write_spec):
    text = "experiment: t\ndataset: conll2003\nmethods:\n  ce: {loss: ce}\n  shallow: {loss: ce, encoder: word2vec-5}\n"
    with pytest.raises(UserInputError) as error:
        compile_plan(write_spec(text), default_catalog())
    (problem,) = error.value.problems
    assert problem.path == "methods.shallow.encoder" and problem.line == 5 and "did you mean 'word2vec-50'" in problem.message


def test_the_resampling_spec_covers_002s_model_grid():
    spec = Path(__file__).parents[3] / "specs" / "resampling.yaml"
    paper = compile_plan(SpecSource(spec, "paper"), default_catalog())
    models = {(arm.method, arm.fixed["encoder"]["name"], arm.head) for arm in paper.arms if arm.sampler == "full"}
    assert {
        ("softmax", "google-bert/bert-base-cased", "softmax"),
        ("crf", "google-bert/bert-base-cased", "crf"),
        ("shallow_softmax", "minilm-static-50", "softmax"),
        ("shallow_crf", "minilm-static-50", "crfsuite"),
        ("bilstm_softmax", "minilm-static-50", "bilstm_softmax"),
        ("bilstm_crf", "minilm-static-50", "bilstm_crf"),
    } <= models
    cpu = compile_plan(SpecSource(spec, "cpu"), default_catalog())
    word_models = {"shallow_softmax", "shallow_crf", "bilstm_softmax", "bilstm_crf"}
    assert {arm.dataset for arm in cpu.arms} == {"wnut17"}
    assert {arm.method for arm in cpu.arms} == {"softmax", "crf", "focal", "dice"} | word_models
    samplers = {arm.sampler for arm in cpu.arms if arm.method in word_models}
    assert samplers == {"fraction-0.1", "fraction-0.1+sc", "fraction-0.1+scr"}


def test_a_plan_of_100000_runs_compiles_and_hashes_in_seconds(catalog, write_spec):
    """2 sampler settings x 25 partitions x 1,000 seeds x 2 methods: the most runs a spec may ask for (rules.MAX_RUNS)."""
    spec = write_spec(
        "experiment: big\ndataset: conll2003\nsamplers: [{low_resource: {size: [10, 20], partitions: 25}}]\n"
        "methods: {ce: {loss: ce}, focal: {loss: focal}}\nreplicate: {seeds: 1000}\n"
    )
    started = time.perf_counter()
    plan = compile_plan(spec, catalog)
    digest = plan.sha256()
    elapsed = time.perf_counter() - started
    assert plan.total_trials() == 100_000 and len(digest) == 64
    assert elapsed < scaled(10), f"planning 100,000 runs took {elapsed:.1f} s"
    # One Replicate per seed and partition, whatever the number of methods and settings that run them.
    first, last = plan.arms[0], plan.arms[-1]
    assert first.sampler != last.sampler and all(a is b for a, b in zip(first.replicates, last.replicates))


SEQUENTIAL = (
    "experiment: t\ndataset: conll2003\n"
    "samplers: {samplers}\n"
    "methods:\n  ce: {{loss: ce}}\n  mom: {{loss: mom, lambda: 0.2}}\n"
    "replicate: {{{seeds}sequential: {{max_seeds: 9, look_every: 3}}}}\n"
)
PARTITIONED = "[{low_resource: {size: 20, partitions: 9}}]"


@pytest.mark.parametrize(
    ("seeds", "per_partition"), [("seeds: 1, ", (0,)), ("", (0,)), ("seeds: 2, ", (0, 1)), ("seeds: [5, 3], ", (5, 3))]
)
def test_a_sequential_partitioned_arm_holds_max_seeds_partitions_of_the_given_seeds(catalog, write_spec, seeds, per_partition):
    """max_seeds counts partitions of a partitioned arm; `replicate.seeds` (default 1) runs in each."""
    plan = compile_plan(write_spec(SEQUENTIAL.format(samplers=PARTITIONED, seeds=seeds)), catalog)
    for arm in plan.arms:
        assert [(r.partition, r.seed) for r in arm.replicates] == [(p, s) for p in range(9) for s in per_partition], arm.id


def test_a_sequential_unpartitioned_arm_holds_seeds_up_to_max_seeds(catalog, write_spec):
    for seeds in ("", "seeds: 9, "):
        plan = compile_plan(write_spec(SEQUENTIAL.format(samplers="[]", seeds=seeds)), catalog)
        assert {tuple((r.partition, r.seed) for r in arm.replicates) for arm in plan.arms} == {tuple((0, s) for s in range(9))}


def test_a_sequential_spec_mixing_partitioned_and_unpartitioned_arms_gives_each_its_units(catalog, write_spec):
    text = SEQUENTIAL.format(samplers=f"[[], {PARTITIONED}]", seeds="seeds: 2, ")
    plan = compile_plan(write_spec(text), catalog)
    full, low = plan.arm("conll2003/full/mom"), plan.arm("conll2003/low_resource-20/mom")
    assert [(r.partition, r.seed) for r in full.replicates] == [(0, s) for s in range(9)]
    assert [(r.partition, r.seed) for r in low.replicates] == [(p, s) for p in range(9) for s in (0, 1)]
