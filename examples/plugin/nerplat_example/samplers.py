"""Keep the first n training sentences: a deterministic sampler for learning curves over document order."""

from __future__ import annotations

from pydantic import Field

from nerplat.data.corpus import Corpus
from nerplat.data.samplers import SAMPLERS
from nerplat.data.samplers.registry import SamplerConfig


class FirstConfig(SamplerConfig):
    n: int = Field(ge=1, description="Training sentences kept, from the start of the file.")


@SAMPLERS.register("first_n", FirstConfig, examples=({"n": 2},))
def first_n(config: FirstConfig, corpus: Corpus, *, seed: int, partition: int) -> Corpus:
    """The first n training sentences (example plugin)."""
    kept = corpus.train[: config.n]
    return corpus.with_train(kept, f"{config.describe('first_n')}: {len(kept)} of {len(corpus.train)} train sentences")
