from collections import Counter

import pytest
from corpus_fakes import corpus
from wordnet_fakes import write_wordnet

from nerplat.config.trial import Component
from nerplat.data.samplers import apply_samplers
from nerplat.data.samplers.augmentation import AugmentationConfig, Vocabulary, segments
from nerplat.data.tags import iob2_violations, mentions
from nerplat.data.wordnet import WordNet, wordnet_folder
from nerplat.errors import UserInputError

C = corpus(
    [
        "Ann/B-PER Lee/I-PER met/O Bob/B-PER in/O sunny/O Rome/B-LOC ./O",
        "New/B-LOC York/I-LOC sleeps/O",
        "Zed/B-PER waits/O",
    ]
)


def augment(seed=0, **params):
    return apply_samplers(C, [Component(name="augmentation", params=params)], seed=seed, partition=0)


def copies(sampled, per_original=1):
    return [s for i, s in enumerate(sampled.train) if i % (per_original + 1)]


def test_originals_are_kept_each_followed_by_its_copies():
    sampled = augment(copies=2, p=0.5)
    assert len(sampled.train) == 9 and sampled.train[::3] == C.train
    assert "3 -> 9 train sentences" in sampled.notes[-1]


def test_label_wise_token_replacement_draws_tokens_of_the_same_label():
    vocabulary = Vocabulary(C.train)
    for original, copy in zip(C.train, copies(augment(methods=["lwtr"], p=1.0))):
        assert copy.tags == original.tags
        assert all(token in vocabulary.tokens[tag] for token, tag in zip(copy.tokens, copy.tags))
    assert set(vocabulary.tokens["I-LOC"]) == {"York"}


def test_mention_replacement_swaps_whole_mentions_of_the_same_type():
    known = {("PER", ("Ann", "Lee")), ("PER", ("Bob",)), ("PER", ("Zed",)), ("LOC", ("Rome",)), ("LOC", ("New", "York"))}
    for original, copy in zip(C.train, copies(augment(methods=["mr"], p=1.0, seed=5))):
        assert iob2_violations(copy.tags) == []
        assert [k for k, _, _ in mentions(copy.tags)] == [k for k, _, _ in mentions(original.tags)]
        assert {(k, copy.tokens[a:b]) for k, a, b in mentions(copy.tags)} <= known
        assert [t for t, g in zip(copy.tokens, copy.tags) if g == "O"] == [
            t for t, g in zip(original.tokens, original.tags) if g == "O"
        ]


def test_shuffle_within_segments_keeps_labels_and_segment_contents():
    assert segments(C.train[0].tags) == [(0, 2), (2, 3), (3, 4), (4, 6), (6, 7), (7, 8)]
    for original, copy in zip(C.train, copies(augment(methods=["sis"], p=1.0, seed=2))):
        assert copy.tags == original.tags
        for start, end in segments(original.tags):
            assert Counter(copy.tokens[start:end]) == Counter(original.tokens[start:end])


def test_probability_zero_copies_the_originals():
    sampled = augment(p=0.0)
    assert copies(sampled) == list(C.train) and "(3 copies identical to their original)" in sampled.notes[-1]


def test_synonym_replacement_draws_wordnet_synonyms_and_extends_tags(tmp_path, monkeypatch):
    wordnet = WordNet(write_wordnet(tmp_path))  # car: auto, railway_car
    monkeypatch.setattr("nerplat.data.samplers.augmentation.load_wordnet", lambda: wordnet)
    cars = corpus(["car/B-VEH car/I-VEH sold/O", "a/O car/O"] * 10)
    sampled = apply_samplers(cars, [Component(name="augmentation", params={"methods": ["sr"], "p": 1.0})], seed=0, partition=0)
    made = {(s.tokens, s.tags) for s in sampled.train[1::2]}
    assert (("auto", "railway", "car", "sold"), ("B-VEH", "I-VEH", "I-VEH", "O")) in made
    assert (("railway", "car", "auto", "sold"), ("B-VEH", "I-VEH", "I-VEH", "O")) in made
    assert {(("a", "railway", "car"), ("O", "O", "O")), (("a", "auto"), ("O", "O"))} <= made
    assert all(iob2_violations(tags) == [] for _, tags in made)


def test_synonym_replacement_is_a_default_method_and_fails_early_without_wordnet(tmp_path, monkeypatch):
    assert "sr" in AugmentationConfig().methods
    monkeypatch.setenv("NERPLAT_WORDNET", str(tmp_path))
    monkeypatch.setattr("nerplat.data.samplers.augmentation.load_wordnet", lambda: WordNet(wordnet_folder()))
    with pytest.raises(UserInputError, match="NERPLAT_WORDNET"):
        augment(methods=["sr"])


def test_unknown_methods_are_refused():
    with pytest.raises(UserInputError, match="methods"):
        augment(methods=["eda"])
