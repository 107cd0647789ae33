import re
from collections import Counter

import pytest

from nerplat.config.trial import Component
from nerplat.data.samplers import apply_samplers
from nerplat.data.corpus_stats import entity_token_share
from nerplat.errors import UserInputError


def sample(corpus, seed=0, **params):
    return apply_samplers(corpus, [Component(name="entity_ratio", params=params)], seed=seed, partition=0)


@pytest.mark.parametrize("ratio", [0.01, 0.02, 0.05, 0.1, 0.2])
def test_reaches_the_papers_ratios_and_reports_the_share(conll2003, ratio):
    sampled = sample(conll2003, size=200, ratio=ratio, seed=4)
    share = entity_token_share(sampled.train)
    assert len(sampled.train) == 200
    assert not Counter(sampled.train) - Counter(conll2003.train)  # without replacement
    assert abs(share - ratio) <= 0.05 * ratio
    reported = float(re.search(r"share reached ([0-9.]+)", sampled.notes[-1]).group(1))
    assert reported == pytest.approx(share, abs=5e-5)


def test_seed_changes_the_draw(small_conll):
    assert sample(small_conll, size=50, ratio=0.1, seed=1).train != sample(small_conll, size=50, ratio=0.1, seed=2).train


def test_unreachable_ratio_fails_with_the_closest_share(small_conll):
    with pytest.raises(UserInputError, match=r"cannot reach an entity-token share of 95.00% .* closest found is"):
        sample(small_conll, size=100, ratio=0.95)


def test_too_many_sentences_fails(small_conll):
    with pytest.raises(UserInputError, match="asked for 500 sentences"):
        sample(small_conll, size=500, ratio=0.1)
