"""Decision thresholds of two-task heads: chosen on dev, and the paper's fixed cut beside them.

AUC-trained heads rank words well but their scores are not calibrated around 0.5: AUC-2T ranked
tokens well and found almost no entity at Nguyen et al. 2023a's fixed 0.5 cut (docs/performance.md,
"Figures behind the code's choices"). Choosing the entity and beginning thresholds on dev
(coordinate search: entity with beginning at 0.5, then beginning) is the recipe
`train.tune_threshold` switches on; a fair comparison switches it on for every two-task arm (CE-2T
too), not only for the AUC ones. An evaluation makes one forward pass over its split; the search,
the scores at the chosen thresholds and the fixed-cut variant only decode it again.

Nguyen et al. 2023a decode at a fixed 0.5. So that both protocols can be reported, a trial that tunes its
thresholds also scores its final evaluation at the head's configured threshold (`threshold`, 0.5
unless set): those metrics are logged as `<split>_fixed_threshold_<name>` beside `<split>_<name>`.
"""

from __future__ import annotations

from nerplat.metrics import FIXED_THRESHOLD_INFIX, evaluate_tags
from nerplat.models.heads.registry import HEADS
from nerplat.models.tagger import Tagger
from nerplat.config.trial import Component
from nerplat.trial.batching import ids_to_tags
from nerplat.trial.predict import Inference, decode_sentences, head_outputs
from nerplat.trial.variant import Examples

CANDIDATES = tuple(round(0.05 * step, 2) for step in range(1, 20))  # 0.05 ... 0.95


class ScoredSentences:
    """Head outputs of every window of a split from one forward pass (in the trial's evaluation
    arithmetic, `predict.head_outputs`), decoded again at any thresholds: the threshold search, the
    split's scores at the chosen thresholds and the fixed-cut variant all read this one pass."""

    def __init__(self, tagger: Tagger, features: Examples, inference: Inference):
        self.head, self.features = tagger.head, features
        self.scored = list(head_outputs(tagger, features, inference))

    def tags(self, labels: list[str], entity: float, beginning: float) -> list[list[str]]:
        """Predicted tags per sentence with the head's thresholds set to (entity, beginning)."""
        self.head.set_thresholds(entity, beginning)
        return ids_to_tags(decode_sentences(self.head.decode, self.features, self.scored), labels)

    def metrics(self, gold: list[list[str]], labels: list[str], entity: float, beginning: float) -> dict[str, float]:
        """Every metric of `evaluate_tags` with the head's thresholds set to (entity, beginning)."""
        return evaluate_tags(gold, self.tags(labels, entity, beginning))


def choose_thresholds(scored: ScoredSentences, gold: list[list[str]], labels: list[str], metric: str) -> tuple[float, float]:
    """Sets and returns the (entity, beginning) thresholds that maximise `metric` on the scored sentences."""
    entity = max(CANDIDATES, key=lambda t: scored.metrics(gold, labels, t, 0.5)[metric])
    beginning = max(CANDIDATES, key=lambda t: scored.metrics(gold, labels, entity, t)[metric])
    scored.head.set_thresholds(entity, beginning)
    return entity, beginning


def configured_threshold(head: Component) -> float:
    """The fixed decision threshold the head's spec entry gives (Nguyen et al. 2023a's 0.5 by default)."""
    return HEADS.get(head.name).config.model_validate(head.params).threshold


def fixed_threshold_metrics(
    scored: ScoredSentences, head: Component, gold: list[list[str]], labels: list[str], split: str
) -> dict[str, float]:
    """`<split>_fixed_threshold_<name>` metrics at the head's configured threshold.

    The head's current (tuned) thresholds are restored afterwards, so the model's state is unchanged.
    """
    tuned = tuple(float(t) for t in scored.head.threshold.tolist())
    fixed = configured_threshold(head)
    metrics = scored.metrics(gold, labels, fixed, fixed)
    scored.head.set_thresholds(*tuned)
    return {f"{split}_{FIXED_THRESHOLD_INFIX}{name}": value for name, value in metrics.items()}
