"""sC, sCR, sCRD, nsCRD against repeat counts worked out by hand (Wang & Wang 2022, eq. 1-4 and the authors' code)."""

import math

import pytest
from corpus_fakes import corpus

from nerplat.config.trial import Component
from nerplat.data.samplers import apply_samplers
from nerplat.data.samplers.resampling import rareness, repeat_counts

# N = 16 tokens; X has 4 tokens -> r_X = log2(16/4) = 2; Y has 1 -> r_Y = 4. Every sentence has length 4.
# S = sum_t r_t c(t,s): s1 = 2*2 = 4, s2 = 4*1 + 2*1 = 6, s3 = 0, s4 = 2*1 = 2.
FOUR = corpus(["a/B-X b/I-X c/O d/O", "e/B-Y f/O g/B-X h/O", "i/O j/O k/O l/O", "m/B-X n/O o/O p/O"])
# N = 16; one X token -> r_X = 4; s1 has length 9 (sqrt 3), S = 4.
LONG = corpus(["a/B-X b/O c/O d/O e/O f/O g/O h/O i/O", "j/O k/O l/O m/O n/O o/O p/O"])

EXPECTED = {
    # paper: sc = 1 + sum c; scr = 1 + ceil(sqrt S); scrd = 1 + ceil(S / sqrt l); nscrd = 1 + ceil(sum r sqrt c / sqrt l)
    ("sc", "paper"): ([3, 3, 1, 2], [2, 1]),
    ("scr", "paper"): ([3, 4, 1, 3], [3, 1]),  # sqrt 4 = 2; sqrt 6 = 2.45; sqrt 2 = 1.41 | sqrt 4 = 2
    ("scrd", "paper"): ([3, 4, 1, 2], [3, 1]),  # 4/2, 6/2, 2/2 | 4/3 = 1.33
    ("nscrd", "paper"): ([3, 4, 1, 2], [3, 1]),  # 2*sqrt2/2 = 1.41, (4+2)/2 = 3, 2/2 = 1 | 4/3
    # reference code: the smoothing 1 moves inside; sentences without entities stay at 1
    ("sc", "reference_code"): ([3, 3, 1, 2], [2, 1]),
    ("scr", "reference_code"): ([3, 3, 1, 2], [3, 1]),  # sqrt 5 = 2.24, sqrt 7 = 2.65, sqrt 3 = 1.73 | sqrt 5
    ("scrd", "reference_code"): ([3, 4, 1, 2], [2, 1]),  # 5/2, 7/2, 3/2 | 5/3 = 1.67
    ("nscrd", "reference_code"): ([2, 4, 1, 2], [2, 1]),  # (1+2.83)/2 = 1.91, 7/2, 3/2 | 5/3
}


def test_rareness_is_self_information_of_the_type():
    assert rareness(FOUR.train) == {"X": 2.0, "Y": 4.0}
    assert rareness(LONG.train) == {"X": 4.0}


@pytest.mark.parametrize(("method", "formula"), sorted(EXPECTED))
def test_repeat_counts_by_hand(method, formula):
    four, long = EXPECTED[(method, formula)]
    assert repeat_counts(FOUR.train, method, formula) == four
    assert repeat_counts(LONG.train, method, formula) == long


@pytest.mark.parametrize("method", ["sc", "scr", "scrd", "nscrd"])
def test_sampler_repeats_sentences_in_place_and_defaults_to_the_paper(method):
    sampled = apply_samplers(FOUR, [Component(name=method)], seed=0, partition=0)
    counts = EXPECTED[(method, "paper")][0]
    assert sampled.train == tuple(s for s, f in zip(FOUR.train, counts) for _ in range(f))
    assert sampled.notes[-1].startswith(f"{method}(formula=paper): 4 -> {sum(counts)} train sentences, size factor ")


def test_size_factor_in_the_note_counts_tokens():
    sampled = apply_samplers(LONG, [Component(name="sc")], seed=0, partition=0)
    assert sampled.notes[-1].endswith(f"size factor {25 / 16:.2f} (tokens)")
    assert math.isclose(sum(len(s) for s in sampled.train) / 16, 25 / 16)
