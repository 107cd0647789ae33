import pytest
import torch

from nerplat.config.trial import Component, DatasetRef, EncoderSettings
from nerplat.data.corpora import load_corpus
from nerplat.data.samplers.chain import apply_samplers
from nerplat.metrics import evaluate_tags
from nerplat.models.encoders import load_encoder
from nerplat.models.tagger import build_tagger
from nerplat.config.trial import TrainSettings, TrialConfig
from nerplat.trial.batching import ids_to_tags
from nerplat.trial.features import featurize
from nerplat.trial.predict import Inference, predict
from nerplat.trial.loop import run_trial
from nerplat.trial.thresholds import CANDIDATES, ScoredSentences, choose_thresholds, configured_threshold, fixed_threshold_metrics


@pytest.fixture(scope="module")
def untyped_dev():
    corpus = apply_samplers(load_corpus(DatasetRef(name="conll2003")), [Component(name="untyped")], seed=0, partition=0)
    return corpus.labels(), corpus.dev[:60]


def test_chosen_thresholds_are_candidates_and_never_worse_than_half(untyped_dev):
    labels, sentences = untyped_dev
    settings = EncoderSettings(name="tiny", max_length=48)
    encoder = load_encoder(settings)
    torch.manual_seed(0)
    tagger = build_tagger(encoder, Component(name="two_task"), labels)
    features = featurize(sentences, encoder.tokenizer, settings, labels)
    gold = [list(s.tags) for s in sentences]

    def f1() -> float:
        return evaluate_tags(gold, ids_to_tags(predict(tagger, features, Inference(torch.device("cpu"))), labels))["micro_f1"]

    at_half = f1()
    scored = ScoredSentences(tagger, features, Inference(torch.device("cpu")))
    entity, beginning = choose_thresholds(scored, gold, labels, "micro_f1")
    assert entity in CANDIDATES and beginning in CANDIDATES
    assert tagger.head.threshold.tolist() == pytest.approx([entity, beginning])  # kept in the model's state
    assert f1() >= at_half


def test_fixed_threshold_metrics_score_the_configured_cut_and_keep_the_tuned_thresholds(untyped_dev):
    labels, sentences = untyped_dev
    settings = EncoderSettings(name="tiny", max_length=48)
    encoder = load_encoder(settings)
    torch.manual_seed(0)
    head = Component(name="two_task", params={"threshold": 0.4})
    tagger = build_tagger(encoder, head, labels)
    features = featurize(sentences, encoder.tokenizer, settings, labels)
    gold = [list(s.tags) for s in sentences]
    cpu = torch.device("cpu")
    tagger.head.set_thresholds(0.4, 0.4)
    at_fixed = evaluate_tags(gold, ids_to_tags(predict(tagger, features, Inference(cpu)), labels))
    tagger.head.set_thresholds(0.15, 0.85)

    metrics = fixed_threshold_metrics(ScoredSentences(tagger, features, Inference(cpu)), head, gold, labels, "test")

    assert metrics == {f"test_fixed_threshold_{name}": value for name, value in at_fixed.items()}
    assert tagger.head.threshold.tolist() == pytest.approx([0.15, 0.85])


def test_configured_threshold_is_the_head_setting_or_papers_half():
    assert configured_threshold(Component(name="two_task")) == 0.5
    assert configured_threshold(Component(name="two_task", params={"threshold": 0.3})) == 0.3


def test_a_trial_tuning_thresholds_reports_the_fixed_threshold_variant_beside_the_tuned_one():
    config = TrialConfig(
        dataset=DatasetRef(name="conll2003"),
        samplers=(Component(name="untyped"), Component(name="low_resource", params={"size": 24, "partitions": 1})),
        encoder=EncoderSettings(name="tiny", max_length=48),
        head=Component(name="two_task"),
        objective=Component(name="ce_2t"),
        train=TrainSettings(epochs=1, batch_size=8, lr=1e-3, dev_subset=40, threads=1, tune_threshold=True),
        eval_split="dev",
    )
    result = run_trial(config.model_copy(update={"train": config.train.model_copy(update={"epochs": 3})}))
    selected = result.evaluations[result.selected_epoch - 1].thresholds
    # the thresholds the split was decoded at: the selected epoch's, not the last evaluation's
    assert (result.metrics["dev_threshold_entity"], result.metrics["dev_threshold_beginning"]) == pytest.approx(
        (selected.entity, selected.beginning)
    )
    metrics = run_trial(config).metrics
    assert {"dev_micro_f1", "dev_fixed_threshold_micro_f1", "dev_fixed_threshold_macro_f1"} <= set(metrics)
    untuned = run_trial(config.model_copy(update={"train": config.train.model_copy(update={"tune_threshold": False})}))
    assert not any("fixed_threshold" in key for key in untuned.metrics)
    # the fixed variant of the tuned trial is what the untuned trial (same seed, same weights) reports
    assert metrics["dev_fixed_threshold_micro_f1"] == pytest.approx(untuned.metrics["dev_micro_f1"])


def test_scores_at_any_thresholds_equal_a_fresh_prediction_at_them(untyped_dev):
    """The threshold search, the scores and the fixed-cut variant decode one forward pass: what it
    decodes at given thresholds is what a separate forward pass predicts at them."""
    labels, sentences = untyped_dev
    settings = EncoderSettings(name="tiny", max_length=48)
    encoder = load_encoder(settings)
    torch.manual_seed(0)
    tagger = build_tagger(encoder, Component(name="two_task"), labels)
    features = featurize(sentences, encoder.tokenizer, settings, labels)
    cpu = torch.device("cpu")
    scored = ScoredSentences(tagger, features, Inference(cpu))
    for entity, beginning in ((0.2, 0.7), (0.5, 0.5), (0.9, 0.1)):
        decoded = scored.tags(labels, entity, beginning)
        tagger.head.set_thresholds(entity, beginning)
        assert decoded == ids_to_tags(predict(tagger, features, Inference(cpu)), labels)


def test_a_threshold_tuning_evaluation_makes_one_forward_pass_over_its_split(monkeypatch):
    """Choosing the thresholds and scoring dev each ran dev through the encoder, and the final scores
    and their fixed-cut variant ran test through it twice again; now each split once."""
    from collections import Counter

    from nerplat.models.tagger import Tagger

    config = TrialConfig(
        dataset=DatasetRef(name="conll2003"),
        samplers=(Component(name="untyped"), Component(name="low_resource", params={"size": 24, "partitions": 1})),
        encoder=EncoderSettings(name="tiny", max_length=48),
        head=Component(name="two_task"),
        objective=Component(name="ce_2t"),
        train=TrainSettings(epochs=1, batch_size=8, lr=1e-3, dev_subset=40, threads=1, tune_threshold=True),
        eval_split=None,
    )
    forward = Tagger.forward
    evaluated = Counter()  # window id -> times an evaluation ran it through the tagger

    def counting(self, batch):
        if not torch.is_grad_enabled():
            evaluated.update(batch.windows.tolist())
        return forward(self, batch)

    monkeypatch.setattr(Tagger, "forward", counting)
    run_trial(config)  # the epoch's dev evaluation only
    assert len(evaluated) >= 40 and set(evaluated.values()) == {1}
    evaluated.clear()
    run_trial(config.model_copy(update={"eval_split": "test"}))  # dev after the epoch (window ids < 100), then test
    assert len(evaluated) > 3000 and {count for window, count in evaluated.items() if window >= 100} == {1}
