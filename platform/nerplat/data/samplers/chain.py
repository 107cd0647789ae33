"""Samplers named in a spec, validated and applied in order (``[untyped, {low_resource: {size: 50}}]``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from nerplat.config.trial import Component
from nerplat.data.conll import sentences_sha256
from nerplat.data.corpus import Corpus
from nerplat.data.samplers.registry import SAMPLERS, SamplerConfig
from nerplat.errors import Problem, UserInputError


def sampler_config(name: str, params: Mapping[str, Any], path: str = "") -> SamplerConfig:
    """The validated config of sampler ``name``; every bad parameter is reported, located at ``path.key``."""
    if name not in SAMPLERS:
        raise UserInputError(Problem(SAMPLERS.unknown_message(name), path=path or None))
    entry = SAMPLERS.get(name)
    try:
        return entry.config.model_validate(dict(params))
    except ValidationError as error:
        accepted = ", ".join(entry.config.model_fields) or "none"
        problems = []
        for item in error.errors():
            key = ".".join(str(part) for part in item["loc"])
            where = f"{path}.{key}" if path else key
            if item["type"] == "extra_forbidden":
                message = f"unknown parameter '{key}' of sampler '{name}' (accepted: {accepted})"
            elif item["type"] == "missing":
                message = f"sampler '{name}' needs parameter '{key}'"
            else:
                message = f"sampler '{name}' parameter '{key}': {item['msg']} (got {item.get('input')!r})"
            problems.append(Problem(message, path=where))
        raise UserInputError(problems) from None


def apply_samplers(corpus: Corpus, components: Sequence[Component], *, seed: int, partition: int) -> Corpus:
    """Applies ``components`` in order; the result's checksums gain ``train_sampled``.

    All parameters are validated before any sampler runs, so a bad chain fails at once.
    """
    configs, problems = [], []
    for position, component in enumerate(components):
        try:
            configs.append(sampler_config(component.name, component.params, f"samplers[{position}]"))
        except UserInputError as error:
            problems += error.problems
    if problems:
        raise UserInputError(problems)
    for component, config in zip(components, configs):
        corpus = SAMPLERS.get(component.name).factory(corpus, config, seed=seed, partition=partition)
    if components:
        corpus = replace(corpus, checksums={**corpus.checksums, "train_sampled": sentences_sha256(corpus.train)})
    return corpus
