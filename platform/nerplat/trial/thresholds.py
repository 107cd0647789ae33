"""Decision thresholds of two-task heads chosen on dev.

AUC-trained heads rank words well but their scores are not calibrated around 0.5: measured here,
AUC-2T reached token AUROC 0.95-0.98 with entity F1 0.011 at paper 000's fixed 0.5 cut. Choosing
the entity and beginning thresholds on dev (coordinate search: entity with beginning at 0.5,
then beginning) is the recipe `train.tune_threshold` switches on. The dev scores come from one
forward pass; only decoding is repeated.
"""

from __future__ import annotations

import torch

from nerplat.metrics import evaluate_tags
from nerplat.models.tagger import Tagger
from nerplat.trial.batching import ids_to_tags, iterate_batches, join_windows
from nerplat.trial.features import WindowFeatures

CANDIDATES = tuple(round(0.05 * step, 2) for step in range(1, 20))  # 0.05 ... 0.95


def choose_thresholds(
    tagger: Tagger,
    features: WindowFeatures,
    gold: list[list[str]],
    labels: list[str],
    batch_size: int,
    device: torch.device,
    metric: str,
) -> tuple[float, float]:
    """Sets and returns the (entity, beginning) thresholds that maximise `metric` on these sentences."""
    head = tagger.head
    tagger.eval()
    scored = []
    with torch.inference_mode():
        for batch in iterate_batches(features, batch_size, seed=None):
            scored.append((batch.windows.tolist(), tagger(batch.to(device))))

    def score(entity: float, beginning: float) -> float:
        head.set_thresholds(entity, beginning)
        windows: list[int] = []
        predictions: list[list[int]] = []
        for batch_windows, output in scored:
            predictions += head.decode(output)
            windows += batch_windows
        return evaluate_tags(gold, ids_to_tags(join_windows(features, windows, predictions), labels))[metric]

    entity = max(CANDIDATES, key=lambda t: score(t, 0.5))
    beginning = max(CANDIDATES, key=lambda t: score(entity, t))
    head.set_thresholds(entity, beginning)
    return entity, beginning
