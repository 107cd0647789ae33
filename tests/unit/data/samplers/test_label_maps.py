import pytest
from corpus_fakes import corpus, sentence

from nerplat.config.trial import Component
from nerplat.data.samplers import apply_samplers
from nerplat.errors import UserInputError

C = corpus(["a/B-PER b/I-PER c/B-LOC d/O"], dev=["e/B-LOC f/I-LOC"], test=["g/B-ORG h/B-PER"])


def test_single_type_maps_every_split():
    kept = apply_samplers(C, [Component(name="single_type", params={"type": "PER"})], seed=0, partition=0)
    assert kept.train == (sentence("a/B-PER b/I-PER c/O d/O"),)
    assert kept.dev == (sentence("e/O f/O"),)
    assert kept.test == (sentence("g/O h/B-PER"),)
    assert kept.labels() == ["O", "B-PER", "I-PER"]


def test_single_type_unknown_type_suggests_one():
    with pytest.raises(UserInputError, match="no type 'PERS'; did you mean 'PER'"):
        apply_samplers(C, [Component(name="single_type", params={"type": "PERS"})], seed=0, partition=0)


def test_untyped_keeps_spans_and_iob2_form_in_every_split():
    untyped = apply_samplers(C, [Component(name="untyped")], seed=0, partition=0)
    assert untyped.train == (sentence("a/B-ENT b/I-ENT c/B-ENT d/O"),)
    assert untyped.test == (sentence("g/B-ENT h/B-ENT"),)
    assert untyped.labels() == ["O", "B-ENT", "I-ENT"]
