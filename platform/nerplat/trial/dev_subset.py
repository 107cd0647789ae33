"""The dev sentences tuning is judged on (`train.dev_subset`): drawn with a fixed seed, the same for
every trial and replicate, so configurations are compared on the same sentences."""

from __future__ import annotations

import numpy as np

from nerplat.data.corpus import Sentence

DEV_SUBSET_SEED = 0


def dev_subset(sentences: tuple[Sentence, ...], size: int | None) -> tuple[Sentence, ...]:
    if size is None or size >= len(sentences):
        return sentences
    chosen = np.random.default_rng(DEV_SUBSET_SEED).choice(len(sentences), size=size, replace=False)
    return tuple(sentences[i] for i in sorted(chosen))
