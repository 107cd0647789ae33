"""Balanced undersampling, BUS (Akkasi et al. 2018, as Wang & Wang 2022, sec. 4.2 runs it): a sub-sentence method.

Within each train sentence with e entity tokens, keep the entity tokens and the O tokens nearest
to them: the tokens within distance d of an entity token, with d the smallest distance at which at
least ``ratio * e`` tokens are kept (or the whole sentence). Sentences without entities are
dropped. This is what the authors' code does (growing a window one token a side per round, with
R = 3 "as mentioned in" Akkasi et al.), written as a distance threshold; ``ratio: 2`` keeps about
as many O tokens as entity tokens. Deterministic: no seed is used. Wang & Wang 2022, Table 6 reports a size
factor of 0.32 (tokens) averaged over its four corpora.
"""

from __future__ import annotations

import math

from pydantic import Field

from nerplat.data.corpus import Corpus, Sentence
from nerplat.data.samplers.registry import SAMPLERS, SamplerConfig
from nerplat.data.corpus_stats import size_factor
from nerplat.data.tags import OUTSIDE
from nerplat.errors import UserInputError


class BalancedUndersamplingConfig(SamplerConfig):
    ratio: float = Field(
        3.0, ge=1, description="Tokens kept per entity token in each sentence (Akkasi's R; 3 in the authors' code)."
    )


def distances_to_entities(tags: tuple[str, ...]) -> list[float]:
    """For each position, the distance to the nearest entity token (0 on entity tokens, inf without any)."""
    length = len(tags)
    distance = [math.inf] * length
    last = -math.inf
    for i in range(length):
        if tags[i] != OUTSIDE:
            last = i
        distance[i] = i - last
    last = math.inf
    for i in reversed(range(length)):
        if tags[i] != OUTSIDE:
            last = i
        distance[i] = min(distance[i], last - i)
    return distance


def undersample_sentence(sentence: Sentence, ratio: float) -> Sentence | None:
    """The tokens BUS keeps of ``sentence``, or None when it has no entity."""
    entity = sum(tag != OUTSIDE for tag in sentence.tags)
    if not entity:
        return None
    distance = distances_to_entities(sentence.tags)
    wanted = min(len(sentence), math.ceil(ratio * entity - 1e-9))
    reach = sorted(distance)[wanted - 1]
    keep = [i for i, d in enumerate(distance) if d <= reach]
    return Sentence(tuple(sentence.tokens[i] for i in keep), tuple(sentence.tags[i] for i in keep))


@SAMPLERS.register("balanced_undersampling", BalancedUndersamplingConfig)
def balanced_undersampling(config: BalancedUndersamplingConfig, corpus: Corpus, *, seed: int, partition: int) -> Corpus:
    """Akkasi et al. 2018 BUS: keep entity tokens and their nearest O tokens, about `ratio` x entity tokens."""
    kept = [undersample_sentence(s, config.ratio) for s in corpus.train]
    train = tuple(s for s in kept if s is not None)
    if not train:
        raise UserInputError(f"balanced_undersampling: the train split of '{corpus.name}' has no entity, nothing to keep")
    note = (
        f"{config.describe('balanced_undersampling')}: {len(corpus.train) - len(train)} sentences without entities "
        f"dropped, size factor {size_factor(corpus.train, train):.2f} (tokens)"
    )
    return corpus.with_train(train, note)
