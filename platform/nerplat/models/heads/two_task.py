"""Two-task head (Nguyen et al. 2023a, Fig. 1-2): two binary logits per word, entity (en) and beginning (be).

scores[..., 0] is the en logit (tag != O), scores[..., 1] the be logit (tag starts with B). Decoding
is Algorithm 1: en and be -> B; en and not be -> I; otherwise O (so en = -1, be = +1 gives O, as the
paper chooses). A word is positive for a task when its sigmoid reaches that task's threshold; the
thresholds are a buffer (en, be), 0.5 unless configured, so a trial can set ones chosen on dev
(`set_thresholds`) and they are saved with the model.

The model predicts untyped spans, so the label set must have exactly one type: `O, B-X, I-X`
(`O, B-ENT, I-ENT` after the `untyped` sampler, or one type after `single_type`).
"""

from __future__ import annotations

import torch
from pydantic import Field
from torch import nn

from nerplat.errors import Problem, UserInputError
from nerplat.models.heads.base import HeadConfig, HeadOutput, HeadServing, unpad
from nerplat.models.heads.registry import HEADS


class TwoTaskConfig(HeadConfig):
    threshold: float = Field(
        0.5,
        gt=0.0,
        lt=1.0,
        description="Sigmoid decision threshold of both tasks (a trial may replace it with one chosen on dev).",
    )


class TwoTaskHead(nn.Module):
    def __init__(self, hidden_size: int, labels: list[str], threshold: float):
        super().__init__()
        self.tasks = nn.Linear(hidden_size, 2)
        self.outside, self.begin, self.inside = _untyped_label_ids(labels)
        self.register_buffer("threshold", torch.tensor([threshold, threshold]))  # (en, be)

    def forward(self, word_states: torch.Tensor, mask: torch.Tensor) -> HeadOutput:
        return HeadOutput(scores=self.tasks(word_states), mask=mask)

    def decode(self, output: HeadOutput) -> list[list[int]]:
        positive = torch.sigmoid(output.scores) >= self.threshold
        entity, beginning = positive[..., 0], positive[..., 1]
        ids = torch.full(entity.shape, self.outside, dtype=torch.long, device=entity.device)
        ids[entity & ~beginning] = self.inside
        ids[entity & beginning] = self.begin
        return unpad(ids, output.mask)

    def set_thresholds(self, entity: float, beginning: float) -> None:
        self.threshold.copy_(torch.tensor([entity, beginning]))


def _untyped_label_ids(labels: list[str]) -> tuple[int, int, int]:
    types = {label[2:] for label in labels if label != "O"}
    entity_type = next(iter(types)) if len(types) == 1 else None
    if len(labels) != 3 or set(labels) != {"O", f"B-{entity_type}", f"I-{entity_type}"}:
        raise UserInputError(
            Problem(
                f"head 'two_task' predicts untyped spans, but the labels are {labels}: "
                "add the 'untyped' sampler (or 'single_type') so the corpus has one entity type",
                path="head",
            )
        )
    return labels.index("O"), labels.index(f"B-{entity_type}"), labels.index(f"I-{entity_type}")


def entity_confidence(scores: torch.Tensor, ids: torch.Tensor, outside: int) -> torch.Tensor:
    """The entity sigmoid for B/I words, one minus it for O words."""
    entity = torch.sigmoid(scores[..., 0])
    return torch.where(ids == outside, 1.0 - entity, entity)


@HEADS.register(
    "two_task",
    config=TwoTaskConfig,
    traits=HeadServing(
        decoding="Nguyen et al. 2023a, Algorithm 1 with the saved entity/beginning thresholds",
        confidence=entity_confidence,
    ),
)
def build(config: TwoTaskConfig, *, labels: list[str], hidden_size: int) -> TwoTaskHead:
    """Two binary logits per word (entity, beginning); Nguyen et al. 2023a, Algorithm 1 decoding."""
    return TwoTaskHead(hidden_size, labels, config.threshold)
