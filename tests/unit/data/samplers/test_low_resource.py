from collections import Counter

import pytest

from nerplat.config.trial import Component
from nerplat.data.samplers import apply_samplers
from nerplat.errors import UserInputError


def sample(corpus, seed=0, partition=0, **params):
    return apply_samplers(corpus, [Component(name="low_resource", params=params)], seed=seed, partition=partition)


def test_partition_k_is_seeded_by_k_alone(small_conll):
    p2 = sample(small_conll, size=20, partition=2, seed=0)
    assert p2.train == sample(small_conll, size=20, partition=2, seed=99).train
    assert p2.train != sample(small_conll, size=20, partition=3).train
    assert len(p2.train) == 20
    assert not Counter(p2.train) - Counter(small_conll.train)  # without replacement
    assert "partition 2, 20 of 400 train sentences" in p2.notes[-1]


def test_too_many_sentences_fails_clearly(small_conll):
    with pytest.raises(UserInputError, match="asked for 401 sentences but the train split .* has only 400"):
        sample(small_conll, size=401)


def test_partition_outside_the_configured_range_fails(small_conll):
    with pytest.raises(UserInputError, match="partition 10 is outside 0..9"):
        sample(small_conll, size=5, partition=10)


@pytest.mark.parametrize("params", [{"size": 0}, {"size": 5, "partitions": 0}, {}, {"size": 5, "k": 3}])
def test_static_ranges_and_keys(small_conll, params):
    with pytest.raises(UserInputError):
        sample(small_conll, **params)
