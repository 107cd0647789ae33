"""The compute-matched control: original sentences, as many of them as the matched chain gives."""

from collections import Counter

import pytest

from nerplat.data.samplers import apply_samplers
from nerplat.errors import UserInputError
from nerplat.config.trial import Component


def matched(corpus, to, seed=0):
    return apply_samplers(corpus, [Component(name="matched_steps", params={"to": to})], seed=seed, partition=0)


@pytest.mark.parametrize(
    "to", [["sc"], ["scr"], [{"scr": {"formula": "reference_code"}}], ["augmentation"], [{"fraction": {"f": 0.3}}]]
)
def test_as_many_sentences_as_the_chain_gives_with_the_original_distribution(small_conll, to):
    chain = [
        Component(name=s) if isinstance(s, str) else Component(name=next(iter(s)), params=next(iter(s.values()))) for s in to
    ]
    target = len(apply_samplers(small_conll, chain, seed=0, partition=0).train)
    control = matched(small_conll, to)
    assert len(control.train) == target
    copies, original = Counter(control.train), Counter(small_conll.train)
    assert set(copies) <= set(original)
    whole = target // len(small_conll.train)
    # every sentence repeated the same number of times, give or take one: the distribution is untouched
    assert all(whole * m <= copies[s] <= (whole + 1) * m for s, m in original.items())


def test_the_extra_copies_are_seeded(small_conll):
    assert matched(small_conll, ["sc"], seed=1).train == matched(small_conll, ["sc"], seed=1).train
    assert matched(small_conll, ["sc"], seed=1).train != matched(small_conll, ["sc"], seed=2).train


@pytest.mark.parametrize(
    ("to", "message"),
    [
        (["scrr"], "to\\[0\\]: unknown sampler 'scrr'; did you mean 'scr'"),
        ([{"low_resource": {"size": 5}}], "to\\[0\\]: 'low_resource' draws partitions"),
        ([{"matched_steps": {"to": ["sc"]}}], "cannot match another matched_steps"),
        ([{"sc": {"bogus": 1}}], "to\\[0\\]: unknown key 'bogus' in sampler 'sc'"),
        ([], "samplers\\[0\\].to"),
    ],
)
def test_a_bad_chain_is_refused_with_its_position(small_conll, to, message):
    with pytest.raises(UserInputError, match=message):
        matched(small_conll, to)
