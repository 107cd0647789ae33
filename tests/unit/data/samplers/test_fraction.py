import pytest

from nerplat.config.trial import Component
from nerplat.data.samplers import apply_samplers
from nerplat.errors import UserInputError


def sample(corpus, f, seed=0):
    return apply_samplers(corpus, [Component(name="fraction", params={"f": f})], seed=seed, partition=0)


def test_keeps_round_f_n_sentences_seeded(small_conll):
    quarter = sample(small_conll, 0.25, seed=1)
    assert len(quarter.train) == 100 and set(quarter.train) <= set(small_conll.train)
    assert quarter.train != sample(small_conll, 0.25, seed=2).train
    assert len(sample(small_conll, 0.0001).train) == 1
    assert sample(small_conll, 1.0).train == small_conll.train


@pytest.mark.parametrize("f", [0, -0.5, 1.5, "half"])
def test_fraction_out_of_range_is_refused(small_conll, f):
    with pytest.raises(UserInputError, match="samplers\\[0\\].f"):
        sample(small_conll, f)
