"""A trial whose head is fitted outside the torch loop (the crfsuite CRF): corpus -> samplers ->
features -> one crfsuite fit -> dev evaluation -> evaluation split.

The trial loop hands such trials here (`fitted_outside_loop(config.head)`), so samplers, tuning,
MLflow and analysis see the same `Evaluation` and `TrialResult` as for any torch head. The fit is the
trial's single "epoch" (`selected_epoch` 1); `train_loss` is crfsuite's final penalised negative
log-likelihood, and `fit_converged` whether L-BFGS met its stopping test (the analysis judges the
budget by it, as there is no dev curve). A checkpoint is the crfsuite model file with those two
figures beside it, so a resumed trial skips the fit.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from nerplat.data.corpus import Sentence
from nerplat.errors import Problem, UserInputError
from nerplat.metrics import evaluate_tags
from nerplat.models.encoders import load_encoder
from nerplat.models.heads import HEADS
from nerplat.models.heads.crfsuite import FeatureCRF, WordVectors
from nerplat.models.tagger import head_config
from nerplat.models.word_embeddings import WordEmbeddings
from nerplat.config.trial import Component, TrialConfig
from nerplat.trial.data import prepare_corpus
from nerplat.trial.dev_subset import dev_subset
from nerplat.trial.results import Evaluation, Reporter, Timings, TrialResult

MODEL_FILE = "crfsuite.model"
FIT_FILE = "crfsuite_fit.json"  # final loss and convergence of the fit, kept with the checkpoint


def fitted_outside_loop(head: Component) -> bool:
    return bool(getattr(HEADS.get(head.name).config, "fitted_outside_loop", False))


def run_feature_trial(
    config: TrialConfig,
    *,
    report: Reporter | None = None,
    resume_from: Path | None = None,
) -> TrialResult:
    """Fit and evaluate one configuration of a feature head; same contract as `run_trial`."""
    started = time.perf_counter()
    timings = Timings()
    prepared = prepare_corpus(config.dataset, config.samplers, seed=config.seed, partition=config.partition)
    corpus, labels = prepared.corpus, prepared.corpus.labels()
    settings = head_config(config.head)
    vectors = _word_vectors(config, corpus.train) if settings.embeddings else None
    crf: FeatureCRF = HEADS.get(config.head.name).factory(settings, labels=labels, hidden_size=0)
    timings.setup = time.perf_counter() - started

    fit_started = time.perf_counter()
    if resume_from is not None and (resume_from / MODEL_FILE).is_file():
        crf.model_bytes = (resume_from / MODEL_FILE).read_bytes()
        if (resume_from / FIT_FILE).is_file():
            fit = json.loads((resume_from / FIT_FILE).read_text())
            crf.final_loss, crf.converged = fit["loss"], fit["converged"]
    else:
        crf.fit([(s.tokens, s.tags) for s in corpus.train], vectors)
        timings.train_tokens = sum(len(s) for s in corpus.train)
    timings.train = time.perf_counter() - fit_started

    evaluations = []
    if corpus.dev is not None:
        eval_started = time.perf_counter()
        metrics = _evaluate(crf, dev_subset(corpus.dev, config.train.dev_subset), vectors)[0]
        timings.evaluate += time.perf_counter() - eval_started
        loss = crf.final_loss if crf.final_loss is not None else float("nan")
        evaluations.append(Evaluation(epoch=1, epochs=1, dev=metrics, dev_best=metrics, train_loss=loss, timings=timings))
        if report is not None:
            report(evaluations[0], lambda directory: _save_model(crf, directory))

    final: dict[str, float] = {}
    predictions: list[tuple[Sentence, tuple[str, ...]]] = []
    eval_sentences = {"dev": corpus.dev, "test": corpus.test, None: None}[config.eval_split]
    if eval_sentences is not None:
        eval_started = time.perf_counter()
        metrics, predicted = _evaluate(crf, eval_sentences, vectors)
        timings.evaluate += time.perf_counter() - eval_started
        final = {f"{config.eval_split}_{k}": v for k, v in metrics.items()}
        predictions = [(s, tuple(p)) for s, p in zip(eval_sentences, predicted)]
    timings.total = time.perf_counter() - started
    return TrialResult(
        metrics=final,
        evaluations=evaluations,
        predictions=predictions,
        train_sentences=len(corpus.train),
        size_factor=prepared.size_factor,
        selected_epoch=1,
        fit_converged=crf.converged,
        timings=timings,
        notes=corpus.notes,
        data_checksums=dict(corpus.checksums),
    )


def _evaluate(
    crf: FeatureCRF, sentences: Sequence[Sentence], vectors: WordVectors | None
) -> tuple[dict[str, float], list[list[str]]]:
    predicted = crf.predict([s.tokens for s in sentences], vectors)
    return evaluate_tags([list(s.tags) for s in sentences], predicted), predicted


def _word_vectors(config: TrialConfig, train: Sequence[Sentence]) -> WordVectors:
    """Looks words up in the trial's word-embedding encoder, fitted on the training split as usual."""
    encoder = load_encoder(config.encoder, train=train, seed=config.seed)
    if not isinstance(encoder.model, WordEmbeddings):
        raise UserInputError(
            Problem(
                f"head '{config.head.name}' with embeddings: true needs a word-embedding encoder (minilm-static-50, word2vec-50, "
                f"random-50), not '{config.encoder.name}'; give the method one, or set head_params.embeddings: false",
                path="head.embeddings",
            )
        )
    table = encoder.model.embedding.weight.detach().numpy()
    tokenizer = encoder.tokenizer

    def vectors(tokens: Sequence[str]) -> np.ndarray:
        ids = tokenizer(list(tokens), is_split_into_words=True, add_special_tokens=False)["input_ids"]
        return table[ids]

    return vectors


def _save_model(crf: FeatureCRF, directory: Path) -> None:
    """The fit's summary lands before the model, each through a rename: a model on disk always has its fit beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    fit = json.dumps({"loss": crf.final_loss, "converged": crf.converged}).encode()
    for name, content in ((FIT_FILE, fit), (MODEL_FILE, crf.model_bytes or b"")):
        temporary = directory / f".{name}.tmp"
        temporary.write_bytes(content)
        os.replace(temporary, directory / name)
