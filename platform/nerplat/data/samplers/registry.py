"""The sampler registry and the contract every sampler keeps.

An entry's factory IS the sampling function ``sample(config, corpus, *, seed, partition) -> Corpus``:
it returns a new Corpus (never mutating its input) with a note saying what it did, acts on train
only (label maps excepted: they map every split so evaluation sees the same labels), and is
deterministic for a given seed and partition. Impossible requests raise ``UserInputError``, each
problem's path the parameter to change when one is to blame (``Problem(..., path="size")``):
``nerplat validate`` applies every chain to its corpora and locates the refusal there
(``spec/sampler_refusals.py``).
A registration's ``examples`` are the parameters the contract test runs it with
(``tests/unit/data/samplers/test_sampler_contract.py`` runs every registered sampler).
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

from nerplat.data.corpus import Corpus
from nerplat.registry import Registry


class SamplerConfig(BaseModel):
    """Parameters of a sampler. ``partitioned`` tells the compiler to replicate over partitions;
    ``every_split`` marks a label map, which changes dev and test too."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    partitioned: ClassVar[bool] = False
    every_split: ClassVar[bool] = False

    def describe(self, name: str) -> str:
        """``'low_resource(size=50, partitions=10)'``, for notes."""
        return f"{name}({', '.join(f'{k}={v}' for k, v in self.model_dump().items())})"


class Sampler(Protocol):
    def __call__(self, config: SamplerConfig, corpus: Corpus, *, seed: int, partition: int) -> Corpus: ...


SAMPLERS: Registry[Sampler] = Registry("sampler")
