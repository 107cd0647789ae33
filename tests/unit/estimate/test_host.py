"""What a trial of an arm does, counted on its data before it runs."""

from pathlib import Path

import pytest

from nerplat.catalog import default_catalog
from nerplat.config.trial import Component, DatasetRef, EncoderSettings
from nerplat.estimate.host import epoch_work_on_data
from nerplat.models.encoders import load_encoder
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource
from nerplat.trial.data import prepare_corpus
from nerplat.trial.variant_registry import featurize_for_head

REPO = Path(__file__).parents[3]


@pytest.mark.parametrize(
    ("spec", "objective", "passes"),
    [("ova_auc_lowres", "ova_auc", 3), ("auc2t_lowres_conll", "comauc_2t", 2), ("ova_auc_lowres", "ce", 1)],
)
def test_the_passes_a_batch_takes_come_from_the_objectives_config_on_the_arms_labels(spec, objective, passes):
    plan = compile_plan(SpecSource(REPO / "specs" / f"{spec}.yaml", "cpu"), default_catalog())
    arm = next(arm for arm in plan.arms if arm.objective == objective)
    work_of = epoch_work_on_data(arm)
    assert work_of.passes == passes and work_of.tokens > 0


def test_the_work_counts_the_dev_subset_and_the_test_split_an_evaluation_reads():
    plan = compile_plan(SpecSource(REPO / "specs" / "entity_ratio.yaml", "cpu"), default_catalog())
    work = epoch_work_on_data(plan.arms[0])
    assert 0 < work.dev_tokens < work.test_tokens  # train.dev_subset's 300 sentences; CoNLL-2003's 3453 test sentences


MRC_SPEC = """\
experiment: mrc_work
dataset: conll2003
samplers: [{low_resource: {size: 20}}]
model: {encoder: tiny, max_length: 64, head: mrc}
train: {epochs: 2, batch_size: 8, dev_subset: 10}
methods:
  bce: {loss: mrc_bce}
replicate: {seeds: 1}
"""


def test_the_epoch_tokens_of_an_mrc_arm_count_every_querys_example(tmp_path):
    """An MRC window is read once per entity type, each time with its query and the pair's special tokens
    (`MRCBatch.real_tokens`, what runs log as train_tokens), not once as its context."""
    (tmp_path / "spec.yaml").write_text(MRC_SPEC)
    (arm,) = compile_plan(tmp_path / "spec.yaml", default_catalog()).arms
    work = epoch_work_on_data(arm)
    corpus = prepare_corpus(
        DatasetRef.model_validate(arm.fixed["dataset"]),
        (Component.model_validate(arm.fixed["samplers"][0]),),
        seed=arm.replicates[0].seed,
        partition=0,
    ).corpus
    settings = EncoderSettings.model_validate(arm.fixed["encoder"])
    features = featurize_for_head(
        Component.model_validate(arm.fixed["head"]),
        corpus.name,
        corpus.train,
        load_encoder(settings).tokenizer,
        settings,
        corpus.labels(),
    )
    types = len(features.types)
    # the queries of a window's K examples
    pair = sum(len(query) for query in features.queries) + types * features.layout.specials
    assert types == 4  # CoNLL-2003: PER, LOC, ORG, MISC
    assert work.tokens == types * features.token_counts().sum() + features.num_windows * pair
    assert work.dev_tokens > types * 10  # the dev subset's 10 sentences, each read once per query


TINY_RUN = REPO / "tests" / "integration" / "specs" / "tiny_run.yaml"


def tiny_arms(*overrides: str):
    return compile_plan(SpecSource(TINY_RUN, overrides=overrides), default_catalog()).arms


def test_the_precision_lines_say_what_auto_chose_for_the_arms_and_the_calibration_behind_it(monkeypatch, tmp_path):
    from nerplat.estimate.host import arm_threads, precision_lines, this_machine
    from precision_hosts import calibrated_host

    arms = tiny_arms("train.precision=auto", "train.eval_precision=auto", "train.threads=1")
    calibration = calibrated_host(monkeypatch, tmp_path, threads=1, train_bf16=1.6, evaluate_bf16=0.5)
    assert {arm_threads(arm) for arm in arms} == {1}
    lines = precision_lines(arms)
    assert lines == [
        "precision of arms ce, mom: training auto: bf16 1.60x slower than fp32 here: fp32; "
        "evaluation auto: bf16 2.00x faster than fp32 here: bf16",
        calibration.line(),
    ]
    assert this_machine().precision_of(arms[0]) == "fp32"  # `plan --cost` matches earlier runs by it


def test_no_precision_lines_for_arms_that_name_their_arithmetic(monkeypatch, tmp_path):
    from nerplat.estimate.host import precision_lines
    from precision_hosts import calibrated_host

    calibrated_host(monkeypatch, tmp_path, threads=1, train_bf16=1.6, evaluate_bf16=0.5)
    assert precision_lines(tiny_arms("train.precision=fp32")) == []


def test_a_cpu_without_bf16_units_gets_its_reason_and_no_calibration(monkeypatch, tmp_path):
    from nerplat.estimate.host import precision_lines
    from nerplat.trial import device

    monkeypatch.setenv("NERPLAT_CACHE", str(tmp_path))
    monkeypatch.setattr(device, "cpu_flags", lambda: frozenset({"avx2"}))
    (line,) = precision_lines(tiny_arms("methods.mom.train.precision=auto"))
    assert line.startswith("precision of arm mom: training auto: bf16 emulated on this cpu (torch CPU capability ")
    assert line.endswith("): fp32")
