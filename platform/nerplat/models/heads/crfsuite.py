"""Feature-based linear-chain CRF through python-crfsuite (Wang & Wang 2022's shallow CRF; Wang & Wang 2022 used
sklearn-crfsuite 0.3.6, a wrapper of the same library, with crfsuite's default hyper-parameters).

Not a torch module: it is fitted once, by crfsuite's own L-BFGS on the CRF likelihood with L1/L2
penalties, so its trials are the `feature_crf` variant (`nerplat.trial.feature_crf`), not epochs of optimiser steps.

Features of word i (the standard sklearn-crfsuite set, without part-of-speech tags, which our corpora
lack):

- ``bias``; ``lower`` (the lowercased word); ``prefix3``, ``suffix3``, ``suffix2``;
  ``is_upper``, ``is_title``, ``is_digit``, ``has_digit``, ``is_punct``; ``shape``: the word with
  upper-case letters as X, lower-case as x, digits as d, runs of one kind cut to two (Xxx -> Xx).
- For the neighbours i-1 and i+1 (``context`` words each side): ``lower``, ``is_title``,
  ``is_upper``, prefixed ``-1:``/``+1:``; ``BOS`` / ``EOS`` at the sentence edges.
- With ``embeddings`` (Wang & Wang 2022's "word embeddings as per-word feature vectors"): ``e0`` .. ``e49``, the
  word's vector from the trial's word-embedding encoder as real-valued features.
"""

from __future__ import annotations

import os
import re
import tempfile
import unicodedata
from typing import Callable, ClassVar, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from nerplat.errors import UserInputError
from nerplat.models.heads.registry import HEADS

WordFeatures = dict[str, float | str]
WordVectors = Callable[[Sequence[str]], np.ndarray]  # words of a sentence -> [words, dimensions]


class FeatureHeadConfig(BaseModel):
    """Base of heads that are fitted outside the torch training loop (the `feature_crf` trial variant)."""

    model_config = ConfigDict(extra="forbid")
    variant: ClassVar[str] = "feature_crf"


class CRFSuiteConfig(FeatureHeadConfig):
    c1: float = Field(0.0, ge=0, description="L1 penalty (crfsuite's default 0).")
    c2: float = Field(1.0, ge=0, description="L2 penalty (crfsuite's default 1).")
    max_iterations: int | None = Field(None, ge=1, description="L-BFGS iterations; none: until crfsuite's convergence test.")
    context: int = Field(1, ge=0, le=3, description="Neighbouring words each side whose lexical features are used.")
    embeddings: bool = Field(True, description="Add the word's vector from the trial's word-embedding encoder as features.")


def word_shape(word: str) -> str:
    shape = "".join("X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c for c in word)
    return re.sub(r"(.)\1{2,}", r"\1\1", shape)


def _lexical(word: str) -> WordFeatures:
    return {
        "lower": word.lower(),
        "prefix3": word[:3],
        "suffix3": word[-3:],
        "suffix2": word[-2:],
        "is_upper": float(word.isupper()),
        "is_title": float(word.istitle()),
        "is_digit": float(word.isdigit()),
        "has_digit": float(any(c.isdigit() for c in word)),
        "is_punct": float(all(unicodedata.category(c).startswith("P") for c in word)),
        "shape": word_shape(word),
    }


def sentence_features(tokens: Sequence[str], context: int, vectors: np.ndarray | None) -> list[WordFeatures]:
    """The feature dict of every word of a sentence (see the module docstring)."""
    out = []
    for i, word in enumerate(tokens):
        features: WordFeatures = {"bias": 1.0, **_lexical(word)}
        for offset in [o for k in range(1, context + 1) for o in (-k, k)]:
            j = i + offset
            if 0 <= j < len(tokens):
                neighbour = tokens[j]
                features |= {
                    f"{offset:+d}:lower": neighbour.lower(),
                    f"{offset:+d}:is_title": float(neighbour.istitle()),
                    f"{offset:+d}:is_upper": float(neighbour.isupper()),
                }
        if i == 0:
            features["BOS"] = 1.0
        if i == len(tokens) - 1:
            features["EOS"] = 1.0
        if vectors is not None:
            features |= {f"e{d}": float(v) for d, v in enumerate(vectors[i])}
        out.append(features)
    return out


class FeatureCRF:
    """A crfsuite model over `sentence_features`: `fit` once, then `predict` tag sequences."""

    def __init__(self, config: CRFSuiteConfig, labels: Sequence[str]):
        self.config = config
        self.labels = list(labels)
        self.model_bytes: bytes | None = None
        self.final_loss: float | None = None
        self.converged: bool | None = None  # whether L-BFGS met its stopping test (False: max_iterations cut it)

    def _items(self, tokens: Sequence[str], vectors: WordVectors | None) -> list[WordFeatures]:
        return sentence_features(tokens, self.config.context, None if vectors is None else vectors(tokens))

    def fit(self, sentences: Sequence[tuple[Sequence[str], Sequence[str]]], vectors: WordVectors | None) -> None:
        """Train on (tokens, tags) pairs; the model is kept in memory (`model_bytes`)."""
        pycrfsuite = _pycrfsuite()
        trainer = pycrfsuite.Trainer(verbose=False)
        for tokens, tags in sentences:
            trainer.append(self._items(tokens, vectors), list(tags))
        params = {"c1": self.config.c1, "c2": self.config.c2}
        if self.config.max_iterations is not None:
            params["max_iterations"] = self.config.max_iterations
        trainer.set_params(params)
        handle, path = tempfile.mkstemp(suffix=".crfsuite")
        os.close(handle)
        try:
            trainer.train(path)
            with open(path, "rb") as stream:
                self.model_bytes = stream.read()
        finally:
            os.unlink(path)
        last = trainer.logparser.last_iteration
        self.final_loss = float(last["loss"]) if last and "loss" in last else None
        log = "".join(trainer.logparser.log)
        # crfsuite's train_lbfgs.c: the gradient test ("resulted in convergence") or the delta test over
        # `period` iterations ("the stopping criteria") ended it, not max_iterations nor an error
        self.converged = "L-BFGS resulted in convergence" in log or "L-BFGS terminated with the stopping criteria" in log

    def predict(self, sentences: Sequence[Sequence[str]], vectors: WordVectors | None) -> list[list[str]]:
        if self.model_bytes is None:
            raise RuntimeError("fit the CRF (or load its model_bytes) before predicting")
        tagger = _pycrfsuite().Tagger()
        tagger.open_inmemory(self.model_bytes)
        try:
            return [list(tagger.tag(self._items(tokens, vectors))) if tokens else [] for tokens in sentences]
        finally:
            tagger.close()


def _pycrfsuite():
    try:
        import pycrfsuite
    except ImportError:
        raise UserInputError("head 'crfsuite' needs python-crfsuite: pip install python-crfsuite") from None
    return pycrfsuite


@HEADS.register("crfsuite", config=CRFSuiteConfig)
def build(config: CRFSuiteConfig, *, labels: list[str], hidden_size: int) -> FeatureCRF:
    """Feature-based CRF (python-crfsuite, L-BFGS): lexical features, plus word vectors; fitted once per trial."""
    return FeatureCRF(config, labels)
