"""Low-resource partitions (Nguyen et al. 2023a and 2023b): K training sets of ``size`` sentences each.

Partition k is drawn uniformly without replacement from train with a generator seeded by k alone,
so partition 3 is the same training set for every method, seed and run: methods are compared on
identical data, and seeds vary only the model.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from nerplat.data.corpus import Corpus
from nerplat.data.samplers.registry import SAMPLERS, SamplerConfig
from nerplat.data.seeding import seeded_rng
from nerplat.errors import Problem, UserInputError


class LowResourceConfig(SamplerConfig):
    partitioned: ClassVar[bool] = True
    size: int = Field(ge=1, description="Sentences per partition (papers: 20, 50, 100, 150, ..., 500, 1000).")
    partitions: int = Field(10, ge=1, description="Number K of partitions; partition k is drawn with seed k (papers: 10 or 30).")


@SAMPLERS.register("low_resource", LowResourceConfig, examples=({"size": 30},))
def low_resource(config: LowResourceConfig, corpus: Corpus, *, seed: int, partition: int) -> Corpus:
    """K partitions of `size` train sentences, drawn uniformly without replacement; partition k seeded by k."""
    available = len(corpus.train)
    if not 0 <= partition < config.partitions:
        raise UserInputError(f"low_resource: partition {partition} is outside 0..{config.partitions - 1}")
    if config.size > available:
        raise UserInputError(Problem(
            f"low_resource: asked for {config.size} sentences but the train split of '{corpus.name}' has only "
            f"{available}: set size to at most {available}", path="size",
        ))
    chosen = sorted(seeded_rng("low_resource", partition).sample(range(available), config.size))
    note = f"{config.describe('low_resource')}: partition {partition}, {config.size} of {available} train sentences"
    return corpus.with_train(tuple(corpus.train[i] for i in chosen), note)
