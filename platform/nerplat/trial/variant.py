"""What a trial variant is: how trials of one kind of head read their sentences and train.

A head's config names its variant (`HeadConfig.variant`: `sequence_labelling`, `mrc`, `feature_crf`)
and `trial.variant_registry` maps the name to a `Session` class; nothing else in the trial asks
which head it runs. A variant says

- how sentences become the examples its head reads (`Session.featurize` -> `Examples`: word windows
  in `trial.batching`, (window, query) pairs in `trial.mrc_batching`);
- how those examples are cut into batches and how predictions per window are joined back to words:
  methods of the examples themselves (`Examples.batches`, `Examples.join`), so evaluation, threshold
  search and serving work on any of them unchanged;
- how a trial trains: the stages `trial.loop.run_trial` drives, epochs of optimiser steps
  (`trial.session.TrialSession`, and `trial.mrc_session.MRCSession` over MRC examples) or one fit
  outside the torch loop (`trial.feature_crf.FeatureCRFSession`, crfsuite).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Protocol, Sequence

import numpy as np

from nerplat.config.trial import Component, EncoderSettings
from nerplat.data.corpus import Sentence
from nerplat.trial.results import Evaluation, TrainedTagger, TrialResult


class Examples(Protocol):
    """One split as a head reads it: what an epoch steps through, batches, and the way back to words."""

    def __len__(self) -> int:
        """Examples in the split: what `train.batch_size` counts."""
        ...

    @property
    def labels(self) -> np.ndarray:
        """Label id of every word the split holds once, IGNORE elsewhere (the objectives' label counts)."""
        ...

    def token_counts(self) -> np.ndarray:
        """Sub-tokens per window: what batches are grouped by, and what a cost estimate counts."""
        ...

    def batches(
        self, batch_size: int, *, seed: int | None, batches_per_group: int = 16, max_tokens: int | None = None
    ) -> Iterator[Any]:
        """Collated batches in the order to run them (a seed per training epoch; None to evaluate, then
        `max_tokens` bounds a batch's padded sub-tokens)."""
        ...

    def join(self, windows: Sequence[int], predictions: Sequence[Sequence[int]]) -> list[list[int]]:
        """Label ids per sentence from the predictions of each batch row's window (`batch.windows`)."""
        ...


Featurize = Callable[[Component, str, Sequence[Sentence], Any, EncoderSettings, list[str]], Examples]
"""(head, corpus name, sentences, tokenizer, encoder settings, labels) -> the examples the head reads."""


class Session(Protocol):
    """The stages of one trial, in the order `run_trial` calls them; `steps` counts optimiser steps."""

    variant: ClassVar[str]  # the name heads give in `HeadConfig.variant`
    featurize: ClassVar[Featurize]
    steps: int

    def setup(self) -> None: ...

    def restore(self, directory: Path) -> bool: ...

    def remaining_epochs(self) -> range: ...

    def train_epoch(self, epoch: int) -> float | None:
        """The epoch's last loss, which the loop refuses when it is not finite; None: no optimiser steps."""
        ...

    def evaluates_after(self, epoch: int) -> bool: ...

    def evaluate(self) -> Evaluation: ...

    def save(self, directory: Path) -> None: ...

    def finish(self, keep_model: Callable[[TrainedTagger], None] | None = None) -> TrialResult: ...
