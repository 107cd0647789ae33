"""Imbalanced training sets with a chosen entity-token share (the "imbalanced data generator" of Nguyen et al. 2023a and 2023b).

The papers give no algorithm; ours: draw ``size`` train sentences at random, taking an
entity-bearing sentence whenever the running entity-token share is below ``ratio`` and an
entity-free one otherwise (which keeps the mix random but steered), then, while the share is
outside the tolerance, make the single swap between a chosen and an unchosen sentence that moves
it closest to ``ratio``. Tolerance is relative: ``|reached - ratio| <= tolerance * ratio``. The share
reached is reported in the note; a ratio the corpus cannot reach with ``size`` sentences fails
with the closest share found.
"""

from __future__ import annotations

import bisect

from pydantic import Field

from nerplat.data.corpus import Corpus, Sentence
from nerplat.data.samplers.registry import SAMPLERS, SamplerConfig
from nerplat.data.seeding import seeded_rng
from nerplat.data.tags import OUTSIDE
from nerplat.errors import Problem, UserInputError

MAX_SWAPS = 1_000  # a reachable share needs a handful; an unreachable one must fail fast


class EntityRatioConfig(SamplerConfig):
    size: int = Field(ge=1, description="Sentences in the training set.")
    ratio: float = Field(gt=0, lt=1, description="Target share of entity tokens, e.g. 0.05 for 5% (papers: 1, 2, 5, 10, 20%).")
    tolerance: float = Field(
        0.05, gt=0, lt=1, description="Allowed relative deviation: |reached - ratio| <= tolerance * ratio."
    )


def _excess(sentence: Sentence, ratio: float) -> float:
    """Entity tokens beyond what ``ratio`` allows for the sentence's length; the set's sum is 0 on target."""
    return sum(tag != OUTSIDE for tag in sentence.tags) - ratio * len(sentence)


def _draw(sentences: tuple[Sentence, ...], config: EntityRatioConfig, rng) -> list[int]:
    with_entities = [i for i, s in enumerate(sentences) if any(t != OUTSIDE for t in s.tags)]
    without = [i for i, s in enumerate(sentences) if all(t == OUTSIDE for t in s.tags)]
    rng.shuffle(with_entities)
    rng.shuffle(without)
    chosen: list[int] = []
    excess = 0.0
    for _ in range(config.size):
        take_entity = (excess < 0 or not without) and with_entities
        chosen.append((with_entities if take_entity else without).pop())
        excess += _excess(sentences[chosen[-1]], config.ratio)
    return chosen


def _repair(sentences: tuple[Sentence, ...], chosen: list[int], config: EntityRatioConfig) -> list[int]:
    """Best single swaps until the share is within tolerance (or no swap helps)."""
    excess_of = [_excess(s, config.ratio) for s in sentences]
    chosen_set = set(chosen)
    pool = sorted((excess_of[i], i) for i in range(len(sentences)) if i not in chosen_set)
    pool_keys = [e for e, _ in pool]
    total = sum(excess_of[i] for i in chosen)
    tokens = sum(len(sentences[i]) for i in chosen)
    for _ in range(MAX_SWAPS):
        if abs(total) <= config.tolerance * config.ratio * tokens or not pool:
            break
        best = None  # (|new total|, position in chosen, position in pool)
        for slot, i in enumerate(chosen):
            want = excess_of[i] - total  # the pool excess that would make the total 0
            at = bisect.bisect_left(pool_keys, want)
            for p in (at - 1, at):
                if 0 <= p < len(pool):
                    candidate = abs(total - excess_of[i] + pool_keys[p])
                    if best is None or candidate < best[0]:
                        best = (candidate, slot, p)
        if best is None or best[0] >= abs(total) - 1e-12:
            break
        _, slot, p = best
        out, (incoming_excess, incoming) = chosen[slot], pool.pop(p)
        pool_keys.pop(p)
        at = bisect.bisect_left(pool_keys, excess_of[out])
        pool.insert(at, (excess_of[out], out))
        pool_keys.insert(at, excess_of[out])
        total += incoming_excess - excess_of[out]
        tokens += len(sentences[incoming]) - len(sentences[out])
        chosen[slot] = incoming
    return chosen


@SAMPLERS.register("entity_ratio", EntityRatioConfig, examples=({"size": 60, "ratio": 0.1},))
def entity_ratio(config: EntityRatioConfig, corpus: Corpus, *, seed: int, partition: int) -> Corpus:
    """`size` train sentences whose entity-token share is `ratio` (within `tolerance`); reports the share reached."""
    available = len(corpus.train)
    if config.size > available:
        raise UserInputError(Problem(
            f"entity_ratio: asked for {config.size} sentences but the train split of '{corpus.name}' has only "
            f"{available}: set size to at most {available}", path="size",
        ))
    rng = seeded_rng("entity_ratio", seed, partition)
    chosen = _repair(corpus.train, _draw(corpus.train, config, rng), config)
    train = tuple(corpus.train[i] for i in sorted(chosen))
    tokens = sum(len(s) for s in train)
    reached = sum(t != OUTSIDE for s in train for t in s.tags) / tokens
    if abs(reached - config.ratio) > config.tolerance * config.ratio:
        raise UserInputError(Problem(
            f"entity_ratio: cannot reach an entity-token share of {config.ratio:.2%} (tolerance {config.tolerance:.0%} "
            f"relative) with {config.size} sentences of '{corpus.name}'; the closest found is {reached:.2%}", path="ratio",
        ))
    note = f"{config.describe('entity_ratio')}: {config.size} train sentences, entity-token share reached {reached:.4f}"
    return corpus.with_train(train, note)
