"""`nerplat bench mrc`: what the MRC framework costs against sequence labelling on the same sentences.

MRC reads each window once per entity type, with the type's query in front, and scores every word
pair for span matching, so it does several times the encoder work per sentence. Both frameworks
train one epoch here, one after the other in this process, on the same sampled CoNLL-2003
sentences, the same encoder and the trial loop's own batches (`train.batch_size` sentences for
sequence labelling, examples for MRC as in Li et al.), with AdamW and the first step untimed. The
figures: encoder tokens/s (queries and every copy of the context counted) and sentences/s, whose
ratio is the cost per sentence. The two frameworks train an epoch each in turns, `repeats` times
(at least 5; each continues from its previous epoch, the first step of its first epoch untimed):
every figure is the median (min-max) of the repeats, the cost per sentence taken within a repeat.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from nerplat.bench.repeats import DEFAULT_REPEATS, Spread, check_repeats, interleaved, ratios
from nerplat.config.trial import Component, DatasetRef, EncoderSettings
from nerplat.data.mrc_examples import entity_types
from nerplat.models.encoders import load_encoder
from nerplat.models.tagger import build_tagger
from nerplat.objectives import ObjectiveContext, build_objective
from nerplat.trial.data import prepare_corpus
from nerplat.trial.variant_registry import featurize_for_head


@dataclass
class FrameworkFigures:
    tokens_per_s: Spread  # encoder sub-tokens that are not padding
    sentences_per_s: Spread
    steps: int  # per epoch


@dataclass
class MRCBenchResult:
    encoder: str
    sentences: int
    types: int
    threads: int
    repeats: int
    sequence_labelling: FrameworkFigures
    mrc: FrameworkFigures
    cost_per_sentence: Spread  # sequence-labelling sentences/s over MRC sentences/s, per repeat

    def as_dict(self) -> dict:
        return asdict(self)


def epoch_trainer(
    tagger: torch.nn.Module, objective: torch.nn.Module, batches: list, sentences: int
) -> Callable[[int], tuple[float, float]]:
    """(tokens/s, sentences/s) of one more epoch over `batches` (the very first step, which pays
    one-off allocations, is not timed or counted)."""
    optimizer = torch.optim.AdamW(tagger.parameters(), lr=5e-5)

    def epoch(repeat: int) -> tuple[float, float]:
        tagger.train()
        tokens, timed, started = 0, 0, time.perf_counter()
        for index, batch in enumerate(batches):
            loss = objective(tagger(batch), batch.labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if repeat == 0 and index == 0:
                started = time.perf_counter()
            else:
                tokens, timed = tokens + batch.real_tokens(), timed + 1
        seconds = time.perf_counter() - started
        return tokens / seconds, sentences * timed / len(batches) / seconds

    return epoch


def bench_mrc(
    encoder: str = "minilm-l6", sentences: int = 160, batch_size: int = 32, max_length: int = 128, threads: int | None = None,
    repeats: int = DEFAULT_REPEATS,
) -> MRCBenchResult:  # fmt: skip

    repeats = check_repeats(repeats)
    if sentences < 2:
        raise ValueError("the benchmark needs at least 2 sentences (the first batch is not timed)")
    if threads:
        torch.set_num_threads(threads)
    settings = EncoderSettings(name=encoder, max_length=max_length)
    loaded = load_encoder(settings)
    sampler = Component(name="low_resource", params={"size": sentences, "partitions": 1})
    corpus = prepare_corpus(DatasetRef(name="conll2003"), (sampler,), seed=0, partition=0).corpus
    labels = corpus.labels()
    context = ObjectiveContext(labels=labels, label_counts=[1] * len(labels), max_length=max_length)
    epochs, steps = {}, {}
    for head, loss in (("softmax", "ce"), ("mrc", "mrc_bce")):
        torch.manual_seed(0)
        features = featurize_for_head(Component(name=head), corpus.name, corpus.train, loaded.tokenizer, settings, labels)
        batches = list(features.batches(batch_size, seed=1))
        tagger = build_tagger(dataclasses.replace(loaded, model=copy.deepcopy(loaded.model)), Component(name=head), labels)
        epochs[head] = epoch_trainer(tagger, build_objective(loss, {}, context), batches, len(corpus.train))
        steps[head] = len(batches)
    measured = interleaved(epochs, repeats)

    def figures(head: str) -> FrameworkFigures:
        tokens, sentences_per_s = zip(*measured[head])
        return FrameworkFigures(Spread.of(tokens), Spread.of(sentences_per_s), steps[head])

    return MRCBenchResult(
        encoder=encoder,
        sentences=len(corpus.train),
        types=len(entity_types(labels)),
        threads=torch.get_num_threads(),
        repeats=repeats,
        sequence_labelling=figures("softmax"),
        mrc=figures("mrc"),
        cost_per_sentence=ratios([f[1] for f in measured["softmax"]], [f[1] for f in measured["mrc"]]),
    )
