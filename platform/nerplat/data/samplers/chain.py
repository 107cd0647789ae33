"""Samplers named in a spec, validated and applied in order (``[untyped, {low_resource: {size: 50}}]``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from nerplat.config.trial import Component
from nerplat.data.conll import sentences_sha256
from nerplat.data.corpus import Corpus
from nerplat.data.samplers.registry import SAMPLERS
from nerplat.errors import UserInputError


def apply_samplers(corpus: Corpus, components: Sequence[Component], *, seed: int, partition: int) -> Corpus:
    """Applies ``components`` in order; the result's checksums gain ``train_sampled``.

    All parameters are validated before any sampler runs, so a bad chain fails at once.
    """
    configs, problems = [], []
    for position, component in enumerate(components):
        try:
            configs.append(SAMPLERS.config(component.name, component.params, at=f"samplers[{position}]"))
        except UserInputError as error:
            problems += error.problems
    if problems:
        raise UserInputError(problems)
    for component, config in zip(components, configs):
        corpus = SAMPLERS.get(component.name).factory(config, corpus, seed=seed, partition=partition)
    if components:
        corpus = replace(corpus, checksums={**corpus.checksums, "train_sampled": sentences_sha256(corpus.train)})
    return corpus
