"""The data of a trial: the corpus after its samplers (built once per process) and its features.

Trials of a sweep share a Ray worker process (Tune reuses actors), so reading and sampling a corpus
is memoised here by its full description; the features are what the trial's variant makes of the
splits (`trial.variant.Featurize`: windows, cached on disk by `trial.features`, or MRC examples).
The dev subset (`train.dev_subset`, `trial.dev_subset`) is the same for every trial and replicate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from nerplat.config.trial import Component, DatasetRef, TrialConfig
from nerplat.data.corpora import load_corpus
from nerplat.data.corpus import Corpus, Sentence
from nerplat.data.samplers.chain import apply_samplers
from nerplat.data.corpus_stats import size_factor
from nerplat.trial.dev_subset import dev_subset
from nerplat.trial.variant import Examples, Featurize


@dataclass(frozen=True)
class PreparedCorpus:
    corpus: Corpus  # after samplers
    size_factor: float  # sampled train tokens / original train tokens


def prepare_corpus(dataset: DatasetRef, samplers: Sequence[Component], *, seed: int, partition: int) -> PreparedCorpus:
    key = json.dumps(
        {"dataset": dataset.model_dump(mode="json"), "samplers": [s.model_dump(mode="json") for s in samplers]},
        sort_keys=True,
    )
    return _prepare_cached(key, seed, partition)


@lru_cache(maxsize=8)
def _prepare_cached(key: str, seed: int, partition: int) -> PreparedCorpus:
    description = json.loads(key)
    original = _load_cached(json.dumps(description["dataset"], sort_keys=True))
    samplers = [Component.model_validate(s) for s in description["samplers"]]
    sampled = apply_samplers(original, samplers, seed=seed, partition=partition)
    return PreparedCorpus(sampled, size_factor(original.train, sampled.train))


@lru_cache(maxsize=4)
def _load_cached(dataset_key: str) -> Corpus:
    # A dev split carved from train (dev_from_train) uses seed 0 for every trial, so tuning and all
    # replicates are judged on the same dev sentences.
    return load_corpus(DatasetRef.model_validate(json.loads(dataset_key)), seed=0)


@dataclass(frozen=True)
class TrialData:
    """Features of the splits a trial trains on, selects on (dev subset) and is scored on."""

    corpus: Corpus
    size_factor: float
    labels: list[str]
    train: Examples
    dev: Examples | None
    dev_sentences: tuple[Sentence, ...] | None
    eval: Examples | None
    eval_sentences: tuple[Sentence, ...] | None


def prepare_trial_data(config: TrialConfig, tokenizer: object, featurize: Featurize) -> TrialData:
    """The trial's splits as `featurize` (its variant's) makes them for its head."""
    prepared = prepare_corpus(config.dataset, config.samplers, seed=config.seed, partition=config.partition)
    corpus, labels = prepared.corpus, prepared.corpus.labels()

    def features(sentences: tuple[Sentence, ...] | None) -> Examples | None:
        return None if sentences is None else featurize(config.head, corpus.name, sentences, tokenizer, config.encoder, labels)

    dev_sentences = None if corpus.dev is None else dev_subset(corpus.dev, config.train.dev_subset)
    eval_sentences = {"dev": corpus.dev, "test": corpus.test, None: None}[config.eval_split]
    return TrialData(
        corpus=corpus,
        size_factor=prepared.size_factor,
        labels=labels,
        train=features(corpus.train),
        dev=features(dev_sentences),
        dev_sentences=dev_sentences,
        eval=features(eval_sentences),
        eval_sentences=eval_sentences,
    )

