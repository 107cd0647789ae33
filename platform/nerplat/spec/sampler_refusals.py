"""Each sampler setting applied to each corpus it samples, so `validate` and `plan` refuse a request
a corpus cannot meet (`low_resource` asking for more sentences than train has) before any work,
with the message `nerplat train` and the trials of `nerplat run` would otherwise stop on.

A sampler refuses by raising `UserInputError` (`data/samplers/registry.py`); a problem's path, when
it has one, names the parameter to change, so the refusal is located at that parameter of the step
that refused. A chain runs as a trial runs it, for partition 0 and seed 0: what depends on the draw
(whether `entity_ratio` reaches its share) is checked for that draw. Hub corpora are not read
before a run (`data.corpora.checked_corpus_key`), so their settings are checked in the trials. A
chain's outcome on a corpus is kept while the corpus files stay the same, so a spec's profiles,
which mostly share its corpora and settings, cost one reading and one run of each chain.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from nerplat.config.trial import Component
from nerplat.data.corpora import CorpusKey, checked_corpus, checked_corpus_key
from nerplat.data.corpus import Corpus
from nerplat.data.samplers.chain import SamplerRefusal, apply_samplers
from nerplat.errors import Problem
from nerplat.registry import Registry
from nerplat.spec.datasets import NamedDataset
from nerplat.spec.loader import Document
from nerplat.spec.samplers import SamplerSetting

Refusal = tuple[int, tuple[Problem, ...]]  # the position of the step that refused in its chain, its problems
_OUTCOMES: dict[tuple[CorpusKey, str, Registry], Refusal | None] = {}  # (corpus, chain as JSON, registry) -> refusal


def sampler_refusals(
    document: Document, datasets: Sequence[NamedDataset], settings: Sequence[SamplerSetting], samplers: Registry
) -> list[Problem]:
    """What the samplers of every setting refuse of every corpus, located in the spec."""
    problems: list[Problem] = []
    for dataset in datasets:
        key = checked_corpus_key(dataset.ref)
        if key is None:
            continue
        for setting, refusal in zip(settings, _outcomes(key, [s.components for s in settings], samplers)):
            if refusal is not None:
                step, found = refusal
                at = setting.at + (step, setting.components[step].name)
                problems += [document.problem(p.message, at + ((p.path,) if p.path else ())) for p in found]
    return problems


def _outcomes(key: CorpusKey, chains: list[tuple[Component, ...]], samplers: Registry) -> list[Refusal | None]:
    """Each chain's refusal of the corpus `key` names, or None; the corpus is read only for a chain not yet tried on it."""
    keys = [(key, json.dumps([c.model_dump(mode="json") for c in chain], sort_keys=True), samplers) for chain in chains]
    untried = [(k, chain) for k, chain in zip(keys, chains) if k not in _OUTCOMES]
    if untried:
        corpus = checked_corpus(key)
        for k, chain in untried:
            _OUTCOMES[k] = _refusal(corpus, chain, samplers)
    return [_OUTCOMES[k] for k in keys]


def _refusal(corpus: Corpus, chain: tuple[Component, ...], samplers: Registry) -> Refusal | None:
    """The step of `chain` that refuses `corpus` as a trial applies it (`apply_samplers`), and its problems."""
    try:
        apply_samplers(corpus, chain, seed=0, partition=0, samplers=samplers)
    except SamplerRefusal as refusal:
        return refusal.step, tuple(refusal.problems)
    return None
