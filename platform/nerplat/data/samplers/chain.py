"""Samplers named in a spec, validated and applied in order (``[untyped, {low_resource: {size: 50}}]``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from nerplat.config.trial import Component
from nerplat.data.conll import sentences_sha256
from nerplat.data.corpus import Corpus
from nerplat.data.samplers.registry import SAMPLERS
from nerplat.errors import Problem, UserInputError
from nerplat.registry import Registry


class SamplerRefusal(UserInputError):
    """A sampler of a chain refusing the corpus it was given (more sentences than train has, a type
    it lacks): `step` is the sampler's position in the chain, each problem's path the parameter to change."""

    def __init__(self, step: int, problems: list[Problem]):
        super().__init__(problems)
        self.step = step


def apply_samplers(
    corpus: Corpus, components: Sequence[Component], *, seed: int, partition: int, samplers: Registry = SAMPLERS
) -> Corpus:
    """Applies ``components`` in order; the result's checksums gain ``train_sampled``.

    All parameters are validated before any sampler runs, so a bad chain fails at once; a sampler
    that then refuses its corpus raises `SamplerRefusal`. `samplers` is the registry the names are
    looked up in (a catalog's, in `nerplat validate`).
    """
    configs, problems = [], []
    for position, component in enumerate(components):
        try:
            configs.append(samplers.config(component.name, component.params, at=f"samplers[{position}]"))
        except UserInputError as error:
            problems += error.problems
    if problems:
        raise UserInputError(problems)
    for step, (component, config) in enumerate(zip(components, configs)):
        try:
            corpus = samplers.get(component.name).factory(config, corpus, seed=seed, partition=partition)
        except UserInputError as error:  # a chain inside a sampler (matched_steps) refuses at this step too
            raise SamplerRefusal(step, error.problems) from error
    if components:
        corpus = replace(corpus, checksums={**corpus.checksums, "train_sampled": sentences_sha256(corpus.train)})
    return corpus
