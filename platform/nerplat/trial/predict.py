"""A tagger's predictions for whole sentences, and their scores against the gold tags."""

from __future__ import annotations

import torch

from nerplat.data.corpus import Sentence
from nerplat.metrics import evaluate_tags
from nerplat.models.tagger import Tagger
from nerplat.trial.batching import ids_to_tags, iterate_batches, join_windows
from nerplat.trial.features import WindowFeatures


def predict(tagger: Tagger, features: WindowFeatures, batch_size: int, device: torch.device) -> list[list[int]]:
    """Label ids per sentence for every sentence of `features`."""
    tagger.eval()
    windows: list[int] = []
    predictions: list[list[int]] = []
    with torch.inference_mode():
        for batch in iterate_batches(features, batch_size, seed=None):
            predictions += tagger.decode(tagger(batch.to(device)))
            windows += batch.windows.tolist()
    return join_windows(features, windows, predictions)


def evaluate_sentences(
    tagger: Tagger, features: WindowFeatures, sentences: tuple[Sentence, ...], labels: list[str], batch_size: int, device: torch.device
) -> tuple[dict[str, float], list[list[str]]]:
    """(metrics by name, predicted tags per sentence) of `sentences`, whose features are `features`."""
    predicted = ids_to_tags(predict(tagger, features, batch_size, device), labels)
    return evaluate_tags([list(s.tags) for s in sentences], predicted), predicted
