"""A saved tagger is weights only and loads back to the same predictions."""

from __future__ import annotations

import json

import pytest
import torch

from nerplat.errors import UserInputError
from nerplat.serving.bundle import WORD_EMBEDDINGS_FILE, TaggerBundle, load_bundle, save_bundle
from nerplat.serving.predictor import tag_sentences

from tiny_taggers import SENTENCES, tiny_config, train_tagger


def test_bundle_holds_weights_tokenizer_and_decoding_settings_only(softmax_dir):
    names = {p.name for p in softmax_dir.iterdir()}
    assert names == {"tagger.json", "encoder", "tokenizer", "weights.safetensors"}
    settings = json.loads((softmax_dir / "tagger.json").read_text())
    assert settings["labels"][0] == "O" and settings["head"]["name"] == "softmax" and settings["encoder"]["name"] == "tiny"
    from safetensors import safe_open

    with safe_open(str(softmax_dir / "weights.safetensors"), "pt") as weights:
        keys = set(weights.keys())
    assert any(k.startswith("encoder.") for k in keys) and "head.classifier.weight" in keys
    assert not any("optimizer" in k or "objective" in k or "exp_avg" in k for k in keys)


def test_loaded_bundle_has_the_saved_weights_and_saves_again_identically(softmax_dir, tmp_path):
    bundle = load_bundle(softmax_dir)
    assert not bundle.tagger.training
    again = load_bundle(
        save_bundle(tmp_path / "copy", bundle.tagger, bundle.tokenizer, bundle.labels, bundle.head, bundle.encoder)
    )
    for (name, a), (_, b) in zip(bundle.tagger.state_dict().items(), again.tagger.state_dict().items()):
        assert torch.equal(a, b), name
    assert [s.tags for s in tag_sentences(bundle, SENTENCES)] == [s.tags for s in tag_sentences(again, SENTENCES)]


@pytest.mark.parametrize("encoder", ["word2vec-50", "random-50"])
def test_a_word_embedding_tagger_is_saved_and_loads_back_to_the_same_predictions(encoder, tmp_path):
    # Wang & Wang 2022's shallow and Bi-LSTM models: the encoder is an embedding table with a word-level tokenizer
    # made from the training split, not a transformers model (the resampling report kept their models).
    config = tiny_config("softmax", encoder=encoder)
    trained = train_tagger(config)
    saved = save_bundle(tmp_path / encoder, trained.tagger, trained.tokenizer, trained.labels, config.head, config.encoder)
    shape = json.loads((saved / "encoder" / WORD_EMBEDDINGS_FILE).read_text())
    assert shape == {"rows": len(trained.tokenizer.get_vocab()), "dimensions": 50, "trainable": encoder == "random-50"}
    bundle = load_bundle(saved)
    assert bundle.tagger.encoder.embedding.weight.requires_grad == (encoder == "random-50")
    for (name, a), (_, b) in zip(trained.tagger.state_dict().items(), bundle.tagger.state_dict().items()):
        assert torch.equal(a, b), name
    assert bundle.tokenizer("Brussels EU xyzzy".split(), is_split_into_words=True)["input_ids"] == trained.tokenizer(
        "Brussels EU xyzzy".split(), is_split_into_words=True
    )["input_ids"]
    trained.tagger.eval()
    before = TaggerBundle(trained.tagger, trained.tokenizer, trained.labels, config.head, config.encoder)
    assert [s.tags for s in tag_sentences(bundle, SENTENCES)] == [s.tags for s in tag_sentences(before, SENTENCES)]


def test_two_task_thresholds_are_saved_with_the_weights(two_task_dir, tmp_path):
    bundle = load_bundle(two_task_dir)
    bundle.tagger.head.set_thresholds(0.95, 0.35)
    saved = save_bundle(tmp_path / "tuned", bundle.tagger, bundle.tokenizer, bundle.labels, bundle.head, bundle.encoder)
    assert load_bundle(saved).tagger.head.threshold.tolist() == pytest.approx([0.95, 0.35])


@pytest.fixture(scope="module")
def ova_trained():
    """OVA-AUC on the 24-sentence draw, which holds no I-MISC word: that label's head is never trained."""
    config = tiny_config("ova")
    trained = train_tagger(config)
    trained.tagger.eval()
    return TaggerBundle(trained.tagger, trained.tokenizer, trained.labels, config.head, config.encoder)


def test_an_ova_tagger_never_predicts_a_label_without_training_words_saved_or_reloaded(ova_trained, tmp_path):
    before = [s.tags for s in tag_sentences(ova_trained, SENTENCES)]
    assert not any("I-MISC" in tags for tags in before)
    b = ova_trained
    reloaded = load_bundle(save_bundle(tmp_path / "ova", b.tagger, b.tokenizer, b.labels, b.head, b.encoder))
    assert reloaded.tagger.head.trained_labels.tolist() == [label != "I-MISC" for label in b.labels]
    assert [s.tags for s in tag_sentences(reloaded, SENTENCES)] == before


def test_an_ova_bundle_saved_before_the_mask_loads_and_decodes_every_label(ova_trained, tmp_path):
    from safetensors.torch import load_file, save_file

    b = ova_trained
    saved = save_bundle(tmp_path / "old", b.tagger, b.tokenizer, b.labels, b.head, b.encoder)
    weights = load_file(saved / "weights.safetensors")
    del weights["head.trained_labels"]
    save_file(weights, saved / "weights.safetensors")
    assert load_bundle(saved).tagger.head.trained_labels.all()

def test_a_folder_that_is_no_bundle_is_refused_by_name(tmp_path):
    with pytest.raises(UserInputError, match="not a nerplat model folder"):
        load_bundle(tmp_path)
