"""Label maps: ``single_type`` (Nguyen et al. 2023a, Table 3) and ``untyped`` (Nguyen et al. 2023a's two-task evaluation).

Unlike other samplers they change every split, so a model is evaluated on the labels it was
trained on. Deviation from the papers' bare B/I tags: ``untyped`` maps B-x/I-x to ``B-ENT``/``I-ENT`` rather than
bare ``B``/``I``, so every downstream piece (tag checks, seqeval's IOB2 scheme, label lists) keeps
the ``P-TYPE`` form; spans and their boundaries are exactly those of the bare B/I tagging.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from nerplat.data.corpus import Corpus, Sentence
from nerplat.data.samplers.registry import SAMPLERS, SamplerConfig
from nerplat.data.tags import OUTSIDE
from nerplat.errors import Problem, UserInputError
from nerplat.suggest import did_you_mean

UNTYPED = "ENT"


class SingleTypeConfig(SamplerConfig):
    every_split: ClassVar[bool] = True
    type: str = Field(min_length=1, description="The entity type kept (e.g. PER); every other type becomes O.")


class UntypedConfig(SamplerConfig):
    every_split: ClassVar[bool] = True


@SAMPLERS.register("single_type", SingleTypeConfig, examples=({"type": "PER"},))
def single_type(config: SingleTypeConfig, corpus: Corpus, *, seed: int, partition: int) -> Corpus:
    """Every type but `type` becomes O, in every split."""
    types = corpus.entity_types()
    if config.type not in types:
        raise UserInputError(Problem(
            f"single_type: corpus '{corpus.name}' has no type '{config.type}'{did_you_mean(config.type, types)} "
            f"(types: {', '.join(types) or 'none'})", path="type",
        ))

    def keep_one(sentence: Sentence) -> Sentence:
        tags = tuple(t if t == OUTSIDE or t[2:] == config.type else OUTSIDE for t in sentence.tags)
        return Sentence(sentence.tokens, tags)

    return corpus.with_every_split(keep_one, f"{config.describe('single_type')}: other types mapped to O in every split")


@SAMPLERS.register("untyped", UntypedConfig)
def untyped(config: UntypedConfig, corpus: Corpus, *, seed: int, partition: int) -> Corpus:
    """B-x/I-x become B-ENT/I-ENT in every split (spans without types)."""

    def drop_type(sentence: Sentence) -> Sentence:
        return Sentence(sentence.tokens, tuple(t if t == OUTSIDE else f"{t[0]}-{UNTYPED}" for t in sentence.tags))

    return corpus.with_every_split(drop_type, f"untyped: B-x/I-x mapped to B-{UNTYPED}/I-{UNTYPED} in every split")
