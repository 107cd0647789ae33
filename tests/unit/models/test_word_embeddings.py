"""Word-embedding encoders: vocabulary, OOV handling, seeding, the on-disk cache, trainability."""

import numpy as np
import pytest
import torch

from nerplat.data.corpus import Sentence
from nerplat.models.encoder_registry import ENCODERS
from nerplat.models.encoders import load_encoder
from nerplat.models.word_embeddings import Word2VecConfig, WordEmbeddingRecipe
from nerplat.config.trial import EncoderSettings
from nerplat.trial.batching import iterate_batches
from nerplat.trial.features import featurize

TRAIN = [
    Sentence(("The", "cat", "sat", "in", "Paris"), ("O", "O", "O", "O", "B-LOC")),
    Sentence(("the", "dog", "ran", "in", "Rome"), ("O", "O", "O", "O", "B-LOC")),
    Sentence(("A", "cat", "ran"), ("O", "O", "O")),
] * 5
LABELS = ["O", "B-LOC", "I-LOC"]


def encoder(name="word2vec-50", seed=0, train=TRAIN):
    return load_encoder(EncoderSettings(name=name), train=train, seed=seed)


def vector(enc, word):
    (ids,) = enc.tokenizer([[word]], is_split_into_words=True, add_special_tokens=False)["input_ids"]
    return enc.model.embedding.weight[ids[0]].detach().numpy()


def test_the_entries_are_registered():
    assert {"minilm-static-50", "word2vec-50", "random-50"} <= set(ENCODERS.names())


def test_one_lowercased_id_per_word_and_unseen_words_are_unk():
    enc = encoder()
    ids = enc.tokenizer([["The", "the", "THE", "zebra"]], is_split_into_words=True, add_special_tokens=False)["input_ids"][0]
    assert ids[0] == ids[1] == ids[2] != ids[3] == enc.tokenizer.unk_token_id == 1
    assert enc.tokenizer.pad_token_id == 0 and enc.hidden_size == 50
    assert np.all(vector(enc, "zebra") == 0)  # frozen word2vec: [UNK] carries no evidence
    assert len(enc.tokenizer) == 2 + len({t.lower() for s in TRAIN for t in s.tokens})


def test_word2vec_is_seeded_and_frozen_random_is_trainable():
    first, again, other = encoder(seed=1), encoder(seed=1), encoder(seed=2)
    assert np.array_equal(vector(first, "cat"), vector(again, "cat"))
    assert not np.allclose(vector(first, "cat"), vector(other, "cat"))
    assert [p.requires_grad for p in first.model.parameters()] == [False]
    random = encoder("random-50", train=TRAIN + [Sentence(("once",), ("O",))])
    assert [p.requires_grad for p in random.model.parameters()] == [True]
    # min_count 2: a training singleton is [UNK], whose vector is random and learned like any other
    assert vector(random, "once").tolist() == vector(random, "zebra").tolist() != vector(random, "cat").tolist()
    assert not np.all(vector(random, "zebra") == 0)


def test_word2vec_training_is_cached_on_disk(tmp_path, monkeypatch):
    recipe = WordEmbeddingRecipe(Word2VecConfig())
    first = recipe.fit("word2vec-50", TRAIN, 3, cache_dir=tmp_path)
    assert len(list((tmp_path / "embeddings").glob("*.npz"))) == 1

    def no_training(*args):
        raise AssertionError("trained again")

    monkeypatch.setattr("nerplat.models.word_embeddings._train_word2vec", no_training)
    again = recipe.fit("word2vec-50", TRAIN, 3, cache_dir=tmp_path)
    assert torch.equal(first.model.embedding.weight, again.model.embedding.weight)
    with pytest.raises(AssertionError, match="trained again"):
        recipe.fit("word2vec-50", TRAIN, 4, cache_dir=tmp_path)  # another seed is another entry


def test_word_states_come_out_per_word_through_features_and_batches():
    enc = encoder()
    settings = EncoderSettings(name="word2vec-50", max_length=16, window_stride=4)
    features = featurize(TRAIN[:3], enc.tokenizer, settings, LABELS)
    assert features.token_counts().tolist() == [5, 5, 3]  # no special tokens, one id per word
    batch = next(iterate_batches(features, 3, seed=None))
    states = enc.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).last_hidden_state
    assert states.shape == (3, 5, 50)


def test_fitted_encoders_need_the_training_split():
    with pytest.raises(ValueError, match="pass train"):
        load_encoder(EncoderSettings(name="word2vec-50"))
