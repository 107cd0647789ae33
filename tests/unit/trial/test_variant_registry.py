"""Trial variants are chosen by the head's registration: every head names a known variant, each variant
reads its own examples (which batch and join themselves), and a session refuses a head of another variant."""

import pytest
import torch

from nerplat.config.trial import Component, DatasetRef, EncoderSettings, TrainSettings, TrialConfig
from nerplat.data.corpus import Sentence
from nerplat.models.encoder_registry import ENCODERS
from nerplat.models.heads import HEADS
from nerplat.trial.batching import WindowFeatures
from nerplat.trial.feature_crf import FeatureCRFSession
from nerplat.trial.loop import refuse_non_finite
from nerplat.trial.mrc_batching import MRCFeatures
from nerplat.trial.mrc_session import MRCSession
from nerplat.trial.session import TrialSession
from nerplat.trial.variant_registry import VARIANTS, featurize_for_head, session_for

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
SENTENCES = [Sentence(tuple("John Smith lives in New York".split()), tuple("B-PER I-PER O O B-LOC I-LOC".split()))] * 3


def config(head: str) -> TrialConfig:
    return TrialConfig(
        dataset=DatasetRef(name="conll2003"),
        encoder=EncoderSettings(name="tiny", max_length=48),
        head=Component(name=head),
        objective=Component(name="ce"),
        train=TrainSettings(epochs=1, batch_size=4, lr=1e-3),
    )


def test_every_registered_head_names_a_known_variant():
    for name in HEADS.names():
        assert session_for(Component(name=name)) is VARIANTS[HEADS.get(name).config.variant]


@pytest.mark.parametrize(
    ("head", "session"),
    [("softmax", TrialSession), ("crf", TrialSession), ("two_task", TrialSession), ("mrc", MRCSession),
     ("crfsuite", FeatureCRFSession)],
)
def test_the_head_registration_chooses_the_session(head, session):
    assert session_for(Component(name=head)) is session


@pytest.mark.parametrize(("head", "examples"), [("softmax", WindowFeatures), ("mrc", MRCFeatures), ("crfsuite", WindowFeatures)])
def test_each_variant_reads_its_examples_and_they_batch_and_join_back_to_every_word(head, examples):
    tokenizer = ENCODERS.get("tiny").factory(None)[0]
    features = featurize_for_head(Component(name=head), "conll2003", SENTENCES, tokenizer, EncoderSettings(name="tiny"), LABELS)
    assert type(features) is examples
    windows, predictions = [], []
    for batch in features.batches(2, seed=None):
        rows = batch.word_mask.sum(dim=1).tolist()
        per_window = len(rows) // len(batch.windows)  # MRC batches hold K rows per window
        predictions += [[0] * int(n) for n in rows[::per_window]]
        windows += batch.windows.tolist()
    assert features.join(windows, predictions) == [[0] * 6] * 3


@pytest.mark.parametrize("head", ["mrc", "crfsuite"])
def test_a_sequence_labelling_session_refuses_a_head_of_another_variant(head):
    with pytest.raises(ValueError, match="variant_registry.session_for"):
        TrialSession(config(head), device=torch.device("cpu"))


def test_an_epoch_without_optimiser_steps_has_no_loss_to_refuse():
    refuse_non_finite(None, config("crfsuite"), 1, 0)  # a crfsuite fit: nothing raised
