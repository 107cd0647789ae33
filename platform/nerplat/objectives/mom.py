"""Majority-or-minority (MoM) learning, Nemoto et al. 2024, eq. 1-3, over any per-word base loss.

    L_MoM(n)      = (1/M) sum_{i: y_i = O} l(y_i, p_i)                  (eq. 1)
    L_sentence(n) = lambda * L(n) + (1 - lambda) * L_MoM(n)              (eq. 2)
    L_model       = (1/N) sum_n L_sentence(n)                           (eq. 3)

l is the base loss (ce, wce, focal or dice, with its own parameters), M is the padded sequence length
(`ObjectiveContext.max_length`; 128 in Nemoto et al. 2024) and L is the base loss as usually computed. Per batch:
lambda * (mean of l over labelled words) + (1 - lambda) * (sum of l over gold-O words) / (M * B),
B = sentences (rows) in the batch.

Readings and deviations:
- Eq. 1 prints a leading minus; it is the minus of the log in CE (l = log p), not a sign flip of
  the loss: the MoM term is the base loss on O words, which training decreases.
- L is taken as the mean over the batch's labelled words (the usual batch loss, and exactly `ce` etc.
  when lambda = 1) rather than a per-sentence mean averaged over sentences.
- The normaliser is the point: dividing the O term by M, not by the number of labelled words, keeps
  it small relative to L. With both terms divided by the labelled-word count, lambda = 0.2 drove
  MiniLM to predict only O (docs/performance.md, "Figures behind the code's choices").
"""

from __future__ import annotations

from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from nerplat.errors import UserInputError
from nerplat.models.heads.base import HeadOutput
from nerplat.objectives.base import Objective, ObjectiveConfig, ObjectiveContext, labelled_words
from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives.token_loss import TokenLoss, per_word_losses
from nerplat.suggest import unknown_name
from nerplat.validation import located_problems

class BaseLoss(BaseModel):
    """The per-word loss MoM builds on, with that loss's own parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="A registered per-word loss that trains MoM's head (`base_losses`).")
    params: dict[str, Any] = Field(default_factory=dict, description="Parameters of that loss, e.g. {gamma: 2}.")

    @field_validator("name")
    @classmethod
    def _a_per_word_loss(cls, name: str) -> str:
        bases = base_losses()
        if name not in bases:
            raise ValueError(unknown_name("base loss", name, bases, listed_as="per-word losses"))
        return name

    @model_validator(mode="after")
    def _params_fit_the_loss(self) -> BaseLoss:
        config = OBJECTIVES.get(self.name).config
        try:
            config.model_validate(self.params)
        except ValidationError as error:
            details = "; ".join(str(problem) for problem in located_problems(error, config, at="params"))
            raise ValueError(f"bad parameters for base loss '{self.name}': {details}") from None
        return self


class MoMConfig(ObjectiveConfig):
    lambda_: float = Field(
        0.175,
        alias="lambda",
        ge=0.0,
        le=1.0,
        description="Weight of the usual loss; 1 - lambda weighs the O-word term. Nemoto et al. 2024 tune it by TPE "
        "in [0, 1] (0.175 for BERT on CoNLL).",
    )
    base: BaseLoss = Field(
        BaseLoss.model_construct(name="ce", params={}),  # constructed, not validated: other losses may register later
        description="Base per-word loss: a name (e.g. focal) or {name, params}; any per-word loss in the registry.",
    )

    @field_validator("base", mode="before")
    @classmethod
    def _name_alone(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value


def base_losses() -> list[str]:
    """Per-word losses in the registry that train the heads MoM trains (ce, wce, focal and dice at present)."""
    return [name for name in per_word_losses() if set(MoMConfig.heads) <= set(OBJECTIVES.get(name).config.heads)]


class MoMLoss(Objective):
    def __init__(self, config: MoMConfig, base: TokenLoss, outside_id: int, max_length: int):
        super().__init__(config)
        self.base = base
        self.outside_id = outside_id
        self.max_length = max_length

    def forward(self, output: HeadOutput, labels: torch.Tensor, substep: int = 0) -> torch.Tensor:
        self.check_substep(substep)
        lam = self.config.lambda_
        usual = self.base(output, labels)
        scores, gold = labelled_words(output, labels)
        outside = gold == self.outside_id
        if not outside.any():
            return lam * usual
        sentences = output.scores.shape[0]
        majority = self.base.word_losses(scores[outside], gold[outside]).sum() / (self.max_length * sentences)
        return lam * usual + (1.0 - lam) * majority


@OBJECTIVES.register("mom", config=MoMConfig, examples=({"lambda": 0.2, "base": "focal"},))
def build(config: MoMConfig, context: ObjectiveContext) -> MoMLoss:
    """Majority-or-minority learning over a base loss, normalised by the padded length M (Nemoto et al. 2024, eq. 1-3)."""
    if "O" not in context.labels:
        raise UserInputError(f"MoM needs an 'O' label; the corpus labels are {context.labels}")
    base = OBJECTIVES.build(config.base.name, config.base.params, at="objective.base.params", context=context)
    return MoMLoss(config, base, context.labels.index("O"), context.max_length)
