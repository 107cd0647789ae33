"""Compute-matched control: the training set as it is, repeated to the size another sampler gives.

Resampling (sC, sCR, ...) and augmentation enlarge the training set, so at a fixed number of epochs
they also get more optimiser steps than the original data (Wang & Wang 2022 compare them that way). The
`matched_steps` sampler separates the two effects: it leaves the sentence distribution alone and
repeats every training sentence floor(n'/n) times, plus a seeded random n' mod n of them once more,
where n' is the number of training sentences the chain `to` would produce from the same corpus
(same seed and partition). At the same epochs and batch size the control therefore takes the same
optimiser steps as the `to` arm (windows of sentences longer than `max_length` aside), follows the
same learning-rate schedule and gets the same number of dev evaluations. When `to` shrinks the
set (undersampling), the control is a seeded subsample of that size.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from nerplat.data.corpus import Corpus
from nerplat.data.samplers.chain import apply_samplers
from nerplat.data.samplers.registry import SAMPLERS, SamplerConfig
from nerplat.data.seeding import seeded_rng
from nerplat.errors import UserInputError
from nerplat.config.trial import Component


def _component(step: Any) -> Component:
    if isinstance(step, str):
        return Component(name=step)
    if isinstance(step, dict) and len(step) == 1:
        ((name, params),) = step.items()
        if params is None or isinstance(params, dict):
            return Component(name=name, params=params or {})
    raise ValueError(f"a step is a sampler name or {{name: {{params}}}}, got {step!r}")


class MatchedStepsConfig(SamplerConfig):
    to: list[str | dict[str, Any]] = Field(
        min_length=1,
        description="Sampler chain (as in `samplers`, e.g. [scr]) whose training-set size is matched.",
    )

    @field_validator("to")
    @classmethod
    def _check_chain(cls, steps: list[str | dict[str, Any]]) -> list[str | dict[str, Any]]:
        problems = []
        for position, step in enumerate(steps):
            component = _component(step)
            if component.name == "matched_steps":
                problems.append(f"to[{position}]: matched_steps cannot match another matched_steps")
                continue
            try:
                config = SAMPLERS.config(component.name, component.params)
            except UserInputError as error:
                problems += [f"to[{position}]: {problem.message}" for problem in error.problems]
                continue
            if config.partitioned:
                problems.append(f"to[{position}]: '{component.name}' draws partitions; put it before matched_steps in the chain")
        if problems:
            raise ValueError("; ".join(problems))
        return steps

    def chain(self) -> list[Component]:
        return [_component(step) for step in self.to]


@SAMPLERS.register("matched_steps", MatchedStepsConfig, examples=({"to": ["sc"]},))
def matched_steps(config: MatchedStepsConfig, corpus: Corpus, *, seed: int, partition: int) -> Corpus:
    """The training set repeated (or subsampled) to as many sentences as the chain `to` produces."""
    available = len(corpus.train)
    target = len(apply_samplers(corpus, config.chain(), seed=seed, partition=partition).train)
    whole, extra = divmod(target, available)
    once_more = set(seeded_rng("matched_steps", seed, partition).sample(range(available), extra))
    train = tuple(s for i, s in enumerate(corpus.train) for _ in range(whole + (i in once_more)))
    note = f"{config.describe('matched_steps')}: {len(train)} train sentences from {available}, as many as the chain gives"
    return corpus.with_train(train, note)
