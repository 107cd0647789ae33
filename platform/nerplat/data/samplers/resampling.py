"""Sentence-level resampling (Wang & Wang 2022, sec. 3.2, eq. 1-4): sC, sCR, sCRD, nsCRD.

Each train sentence s is repeated f_s >= 1 times, deterministically. With c(t, s) the tokens of
type t in s, l_s its length, N all train tokens and r_t = -log2(sum_s c(t, s) / N) the rareness
of t, and S = sum_t r_t c(t, s):

=======  ================================================  ===============================================
method   ``formula: paper`` (eq. 1-4, the default)           ``formula: reference_code`` (authors' repository)
=======  ================================================  ===============================================
sc       1 + sum_t c(t, s)                                  same
scr      1 + ceil(sqrt(S))                                  ceil(sqrt(1 + S))
scrd     1 + ceil(S / sqrt(l_s))                            ceil((1 + S) / sqrt(l_s))
nscrd    1 + ceil(sum_t r_t sqrt(c(t, s)) / sqrt(l_s))      ceil((1 + sum_t r_t sqrt(c(t, s))) / sqrt(l_s))
=======  ================================================  ===============================================

In the reference code the smoothing 1 sits inside the square root or the length normalisation, so
its factors are smaller; sentences without entities are kept once under both formulas. The
reference code also passes tokens through ``emoji.demojize``; we leave tokens untouched (that is
text cleaning, not resampling). Copies of a sentence are placed next to each other, as the
reference code writes them; training shuffles anyway.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import Field

from nerplat.data.corpus import Corpus, Sentence
from nerplat.data.samplers.registry import SAMPLERS, SamplerConfig
from nerplat.data.corpus_stats import size_factor
from nerplat.data.tags import OUTSIDE

Formula = Literal["paper", "reference_code"]
# (type counts c(t, s), rareness r_t, sentence length l_s) -> repeat count f_s
RepeatRule = Callable[[Counter, dict[str, float], int], int]


class ResamplingConfig(SamplerConfig):
    formula: Formula = Field(
        "paper",
        description="'paper': Wang & Wang 2022's equations 1-4; 'reference_code': the authors' public code (see module doc).",
    )


def rareness(sentences: Sequence[Sentence]) -> dict[str, float]:
    """r_t = -log2(share of train tokens of type t)."""
    counts = Counter(tag[2:] for s in sentences for tag in s.tags if tag != OUTSIDE)
    total = sum(len(s) for s in sentences)
    return {kind: -math.log2(count / total) for kind, count in counts.items()}


def _weighted(counts: Counter, r: dict[str, float]) -> float:
    return sum(r[t] * c for t, c in counts.items())


def _weighted_sqrt(counts: Counter, r: dict[str, float]) -> float:
    return sum(r[t] * math.sqrt(c) for t, c in counts.items())


RULES: dict[tuple[str, Formula], RepeatRule] = {
    ("sc", "paper"): lambda c, r, length: 1 + sum(c.values()),
    ("sc", "reference_code"): lambda c, r, length: 1 + sum(c.values()),
    ("scr", "paper"): lambda c, r, length: 1 + math.ceil(math.sqrt(_weighted(c, r))),
    ("scr", "reference_code"): lambda c, r, length: math.ceil(math.sqrt(1 + _weighted(c, r))),
    ("scrd", "paper"): lambda c, r, length: 1 + math.ceil(_weighted(c, r) / math.sqrt(length)),
    ("scrd", "reference_code"): lambda c, r, length: math.ceil((1 + _weighted(c, r)) / math.sqrt(length)),
    ("nscrd", "paper"): lambda c, r, length: 1 + math.ceil(_weighted_sqrt(c, r) / math.sqrt(length)),
    ("nscrd", "reference_code"): lambda c, r, length: math.ceil((1 + _weighted_sqrt(c, r)) / math.sqrt(length)),
}


def repeat_counts(sentences: Sequence[Sentence], method: str, formula: Formula = "paper") -> list[int]:
    """f_s for every sentence (1 for sentences without entities)."""
    rule = RULES[(method, formula)]
    r = rareness(sentences)
    counts = []
    for sentence in sentences:
        types = Counter(tag[2:] for tag in sentence.tags if tag != OUTSIDE)
        counts.append(rule(types, r, len(sentence)) if types else 1)
    return counts


def resample(corpus: Corpus, method: str, config: ResamplingConfig) -> Corpus:
    repeats = repeat_counts(corpus.train, method, config.formula)
    train = tuple(s for s, f in zip(corpus.train, repeats) for _ in range(f))
    note = (
        f"{config.describe(method)}: {len(corpus.train)} -> {len(train)} train sentences, "
        f"size factor {size_factor(corpus.train, train):.2f} (tokens)"
    )
    return corpus.with_train(train, note)


def _register(method: str, summary: str) -> None:
    def sample(config: ResamplingConfig, corpus: Corpus, *, seed: int, partition: int) -> Corpus:
        return resample(corpus, method, config)

    sample.__doc__ = summary
    SAMPLERS.register(method, ResamplingConfig, examples=({}, {"formula": "reference_code"}))(sample)


_register("sc", "sC (Wang & Wang 2022): repeat each sentence 1 + (entity tokens) times.")
_register("scr", "sCR (Wang & Wang 2022): repeats grow with entity tokens weighted by type rareness (square root).")
_register("scrd", "sCRD (Wang & Wang 2022): sCR's rareness-weighted count divided by sqrt(sentence length).")
_register("nscrd", "nsCRD (Wang & Wang 2022): like sCRD with sqrt of per-type counts (diminishing returns).")
