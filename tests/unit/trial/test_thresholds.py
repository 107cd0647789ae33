import pytest
import torch

from nerplat.config.trial import Component, DatasetRef, EncoderSettings
from nerplat.data.corpora import load_corpus
from nerplat.data.samplers.chain import apply_samplers
from nerplat.metrics import evaluate_tags
from nerplat.models.encoders import load_encoder
from nerplat.models.tagger import build_tagger
from nerplat.trial.batching import ids_to_tags
from nerplat.trial.features import featurize
from nerplat.trial.predict import predict
from nerplat.trial.batching import ids_to_tags
from nerplat.trial.thresholds import CANDIDATES, choose_thresholds


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
        return evaluate_tags(gold, ids_to_tags(predict(tagger, features, 32, torch.device("cpu")), labels))["micro_f1"]

    at_half = f1()
    entity, beginning = choose_thresholds(tagger, features, gold, labels, 32, torch.device("cpu"), "micro_f1")
    assert entity in CANDIDATES and beginning in CANDIDATES
    assert tagger.head.threshold.tolist() == pytest.approx([entity, beginning])  # kept in the model's state
    assert f1() >= at_half
