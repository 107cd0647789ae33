"""Random undersampling of train to a fraction of its sentences (Nemoto et al. 2024, Fig. 2: 3/4 down to 3/100)."""

from __future__ import annotations

from pydantic import Field

from nerplat.data.corpus import Corpus
from nerplat.data.samplers.registry import SAMPLERS, SamplerConfig
from nerplat.data.seeding import seeded_rng


class FractionConfig(SamplerConfig):
    f: float = Field(gt=0, le=1, description="Fraction of train sentences kept (at least one sentence is kept).")


@SAMPLERS.register("fraction", FractionConfig, examples=({"f": 0.25},))
def fraction(config: FractionConfig, corpus: Corpus, *, seed: int, partition: int) -> Corpus:
    """Random undersampling: keep round(f * n) train sentences, drawn without replacement."""
    available = len(corpus.train)
    size = min(available, max(1, round(config.f * available)))
    chosen = sorted(seeded_rng("fraction", seed, partition).sample(range(available), size))
    note = f"{config.describe('fraction')}: {size} of {available} train sentences (seed {seed})"
    return corpus.with_train(tuple(corpus.train[i] for i in chosen), note)
