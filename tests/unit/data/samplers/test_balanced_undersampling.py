import pytest
from corpus_fakes import corpus, sentence

from nerplat.config.trial import Component
from nerplat.data.samplers import apply_samplers
from nerplat.data.samplers.balanced_undersampling import distances_to_entities, undersample_sentence
from nerplat.errors import UserInputError


def test_distances_to_the_nearest_entity_token():
    assert distances_to_entities(("O", "O", "B-X", "O", "O", "O", "B-Y", "I-Y")) == [2, 1, 0, 1, 2, 1, 0, 0]


def test_keeps_the_nearest_o_tokens_until_ratio_times_entity_tokens():
    s = sentence("a/O b/O c/O d/B-X e/O f/O g/O h/O i/O")
    # one entity token, R = 3: distance 1 keeps c, d, e (3 tokens)
    assert undersample_sentence(s, 3.0) == sentence("c/O d/B-X e/O")
    # R = 4: distance 1 gives 3 < 4, distance 2 gives 5 (the window grows on both sides at once)
    assert undersample_sentence(s, 4.0) == sentence("b/O c/O d/B-X e/O f/O")
    assert undersample_sentence(s, 1.0) == sentence("d/B-X")
    assert undersample_sentence(s, 50.0) == s


def test_windows_grow_around_every_entity():
    s = sentence("a/B-X b/O c/O d/O e/O f/B-Y g/I-Y h/O")
    # three entity tokens, R = 2 -> 6 tokens: distance 1 keeps a, b, e, f, g, h (6)
    assert undersample_sentence(s, 2.0) == sentence("a/B-X b/O e/O f/B-Y g/I-Y h/O")


def test_entity_free_sentences_are_dropped_and_the_note_gives_the_factor():
    c = corpus(["a/O b/O c/B-X d/O e/O f/O g/O h/O", "i/O j/O"])
    sampled = apply_samplers(c, [Component(name="balanced_undersampling")], seed=0, partition=0)
    assert sampled.train == (sentence("b/O c/B-X d/O"),)
    assert "1 sentences without entities dropped, size factor 0.30 (tokens)" in sampled.notes[-1]


def test_a_train_split_without_entities_fails_clearly():
    with pytest.raises(UserInputError, match="has no entity"):
        apply_samplers(corpus(["a/O"]), [Component(name="balanced_undersampling")], seed=0, partition=0)
