"""The `feature_crf` trial variant: a head fitted outside the torch loop (the crfsuite CRF), as the stages
`trial.loop.run_trial` drives: corpus -> samplers -> features -> one crfsuite fit -> dev evaluation ->
evaluation split.

Samplers, tuning, MLflow and analysis see the same `Evaluation` and `TrialResult` as for any torch
head. The fit is the trial's single "epoch" (`selected_epoch` 1); `train_loss` is crfsuite's final
penalised negative log-likelihood, and `fit_converged` whether L-BFGS met its stopping test (the
analysis judges the budget by it, as there is no dev curve). `train.early_stopping` has nothing to cut
here: the one fit is the cap (`stopped_by` "cap"), and convergence is `fit_converged`'s. A checkpoint is the crfsuite model file
with those two figures beside it, so a resumed trial skips the fit.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence

import numpy as np

from nerplat.data.corpus import Sentence
from nerplat.errors import Problem, UserInputError
from nerplat.metrics import evaluate_tags
from nerplat.models.encoders import load_encoder
from nerplat.models.heads import HEADS
from nerplat.models.heads.crfsuite import FeatureCRF, WordVectors
from nerplat.models.tagger import head_config
from nerplat.models.word_embeddings import WordEmbeddings
from nerplat.config.trial import TrialConfig
from nerplat.trial.data import prepare_corpus
from nerplat.trial.dev_subset import dev_subset
from nerplat.trial.features import featurize_windows
from nerplat.trial.results import Evaluation, Timings, TrainedTagger, TrialResult
from nerplat.trial.variant import Featurize

MODEL_FILE = "crfsuite.model"
FIT_FILE = "crfsuite_fit.json"  # final loss and convergence of the fit, kept with the checkpoint


class FeatureCRFSession:
    """One crfsuite trial between its stages. `setup` prepares the corpus, the word vectors and the CRF;
    the one epoch is the fit (read from the checkpoint instead when `restore` found one). There are no
    optimiser steps to show or refuse, one evaluation to select, no device but the CPU and no torch
    tagger for `keep_model`, so those options of `TrialSession` change nothing here."""

    variant: ClassVar[str] = "feature_crf"
    featurize: ClassVar[Featurize] = staticmethod(featurize_windows)  # what cost estimates count; the fit reads sentences

    def __init__(self, config: TrialConfig, **ignored: Any):
        self.config = config
        self.steps = 0
        self.timings = Timings()
        self.evaluations: list[Evaluation] = []
        self._checkpoint: Path | None = None

    def setup(self) -> None:
        config = self.config
        self._started = time.perf_counter()
        prepared = prepare_corpus(config.dataset, config.samplers, seed=config.seed, partition=config.partition)
        self.corpus, self.size_factor = prepared.corpus, prepared.size_factor
        settings = head_config(config.head)
        self.vectors = _word_vectors(config, self.corpus.train) if settings.embeddings else None
        self.crf: FeatureCRF = HEADS.get(config.head.name).factory(settings, labels=self.corpus.labels(), hidden_size=0)
        self.timings.setup = time.perf_counter() - self._started

    def restore(self, directory: Path) -> bool:
        """Whether `directory` holds a fitted model, which the epoch then reads instead of fitting."""
        if not (directory / MODEL_FILE).is_file():
            return False
        self._checkpoint = directory
        return True

    def remaining_epochs(self) -> range:
        return range(1, 2)

    def train_epoch(self, epoch: int) -> None:
        started = time.perf_counter()
        if self._checkpoint is not None:
            self.crf.model_bytes = (self._checkpoint / MODEL_FILE).read_bytes()
            if (self._checkpoint / FIT_FILE).is_file():
                fit = json.loads((self._checkpoint / FIT_FILE).read_text())
                self.crf.final_loss, self.crf.converged = fit["loss"], fit["converged"]
        else:
            self.crf.fit([(s.tokens, s.tags) for s in self.corpus.train], self.vectors)
            self.timings.train_tokens = sum(len(s) for s in self.corpus.train)
        self.timings.train = time.perf_counter() - started

    def evaluates_after(self, epoch: int) -> bool:
        return self.corpus.dev is not None

    def evaluate(self) -> Evaluation:
        started = time.perf_counter()
        metrics = _evaluate(self.crf, dev_subset(self.corpus.dev, self.config.train.dev_subset), self.vectors)[0]
        self.timings.evaluate += time.perf_counter() - started
        loss = self.crf.final_loss if self.crf.final_loss is not None else float("nan")
        evaluation = Evaluation(
            epoch=1, epochs=1, dev=metrics, dev_best=metrics, train_loss=loss, timings=self.timings, stopped_by="cap"
        )
        self.evaluations.append(evaluation)
        return evaluation

    def save(self, directory: Path) -> None:
        _save_model(self.crf, directory)

    def finish(self, keep_model: Callable[[TrainedTagger], None] | None = None) -> TrialResult:
        """Scores the evaluation split with the fitted CRF."""
        config, corpus = self.config, self.corpus
        final: dict[str, float] = {}
        predictions: list[tuple[Sentence, tuple[str, ...]]] = []
        eval_sentences = {"dev": corpus.dev, "test": corpus.test, None: None}[config.eval_split]
        if eval_sentences is not None:
            started = time.perf_counter()
            metrics, predicted = _evaluate(self.crf, eval_sentences, self.vectors)
            self.timings.evaluate += time.perf_counter() - started
            final = {f"{config.eval_split}_{k}": v for k, v in metrics.items()}
            predictions = [(s, tuple(p)) for s, p in zip(eval_sentences, predicted)]
        self.timings.total = time.perf_counter() - self._started
        return TrialResult(
            metrics=final,
            evaluations=list(self.evaluations),
            predictions=predictions,
            train_sentences=len(corpus.train),
            size_factor=self.size_factor,
            selected_epoch=1,
            fit_converged=self.crf.converged,
            stopped_by="cap",
            stopped_epoch=1,
            timings=self.timings,
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
