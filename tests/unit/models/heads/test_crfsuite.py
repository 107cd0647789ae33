"""The crfsuite head: documented features, a real python-crfsuite fit, in-memory model, clear errors."""

import numpy as np
import pytest

from nerplat.models.heads import HEADS
from nerplat.models.heads.crfsuite import CRFSuiteConfig, FeatureCRF, sentence_features, word_shape
from nerplat.models.tagger import build_tagger
from nerplat.config.trial import Component

LABELS = ["O", "B-LOC", "I-LOC"]
TRAIN = [
    (("I", "live", "in", "Paris", "now"), ("O", "O", "O", "B-LOC", "O")),
    (("We", "flew", "to", "New", "York"), ("O", "O", "O", "B-LOC", "I-LOC")),
    (("They", "stay", "in", "Rome"), ("O", "O", "O", "B-LOC")),
] * 10


def test_lexical_features_of_a_word_and_its_neighbours():
    first, middle, last = sentence_features(("New", "York", "2024"), context=1, vectors=None)
    assert first["lower"] == "new" and first["BOS"] == 1.0 and "-1:lower" not in first and first["+1:lower"] == "york"
    assert middle["-1:is_title"] == 1.0 and middle["suffix3"] == "ork" and middle["shape"] == "Xxx"
    assert last["is_digit"] == 1.0 and last["EOS"] == 1.0 and last["shape"] == "dd"
    assert word_shape("McDonald's") == "XxXxx'x"  # runs of three or more kinds cut to two


def test_word_vectors_become_real_valued_features():
    (features,) = sentence_features(("Rome",), context=0, vectors=np.array([[0.5, -2.0]]))
    assert features["e0"] == 0.5 and features["e1"] == -2.0


def test_fit_then_predict_learns_the_training_pattern():
    crf = HEADS.get("crfsuite").factory(CRFSuiteConfig(embeddings=False), labels=LABELS, hidden_size=0)
    crf.fit(TRAIN, vectors=None)
    assert crf.model_bytes and crf.final_loss is not None and crf.final_loss > 0
    assert crf.predict([("We", "live", "in", "Paris"), ("to", "New", "York")], vectors=None) == [
        ["O", "O", "O", "B-LOC"],
        ["O", "B-LOC", "I-LOC"],
    ]
    reloaded = FeatureCRF(CRFSuiteConfig(embeddings=False), LABELS)
    reloaded.model_bytes = crf.model_bytes
    assert reloaded.predict([("in", "Rome")], vectors=None) == [["O", "B-LOC"]]


def test_predicting_before_fitting_says_so():
    with pytest.raises(RuntimeError, match="fit the CRF"):
        FeatureCRF(CRFSuiteConfig(), LABELS).predict([("x",)], vectors=None)


def test_the_torch_tagger_refuses_a_head_fitted_outside_the_loop():
    with pytest.raises(ValueError, match="fitted outside the torch loop"):
        build_tagger(encoder=None, head=Component(name="crfsuite"), labels=LABELS)
